"""Hostile import files (issue 27, holes 3, 5, 7): cost with the limits vs without, side by side.

Run: ``.venv/bin/python bench/import_limits_bench.py`` (about a minute). One line per metric
(format in bench/README.md); every baseline is the unguarded way, run in this process.

1. ``nested_peak_memory``: peak traced memory of detecting 10 KB of nested brackets through
   the guarded reader vs ``ijson.items`` on the raw file (what detection did before).
2. ``zip_bomb_peak_memory``: a 64 KB zip whose ``manifest.json`` inflates to 64 MiB: the
   guarded detection vs reading the member whole and ``json.loads`` (before).
3. ``nesting_check_overhead``: parsing a 16 MB ChatGPT export through the nesting check and
   the counting stream vs ``ijson.items`` alone (goal ≤ 2.5×: removing the strings before
   summing brackets costs about what parsing does; an import's writes dominate either way).
4. ``tree_order_chain_vs_thread``: converting 3,000 messages hanging under a chain of 12,000
   empty nodes vs the same messages as one thread (goal ≤ 3×; it was ~50×).
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import ijson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.errors import InvalidInputError  # noqa: E402
from backend.portability.detect import detect  # noqa: E402
from backend.portability.formats import chatgpt  # noqa: E402
from backend.portability.formats.reading import records  # noqa: E402
from backend.portability.import_source import ImportSource  # noqa: E402

MiB = 1024 * 1024
FIXTURE = ROOT / "tests" / "portability" / "fixtures" / "chatgpt_conversations.json"


def report(metric: str, ratio: float, goal: str, details: str) -> None:
    print(f"{metric}: ratio={ratio:.2f} goal={goal} ({details})", flush=True)


def peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
    except (InvalidInputError, ValueError, ijson.JSONError):
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / MiB


def seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def guarded_detect(path: Path) -> None:
    with ImportSource(path) as source:
        detect(source)


def nested(folder: Path) -> None:
    path = folder / "deep.json"
    path.write_bytes(b"[" * 5_000 + b"]" * 5_000)

    def unguarded() -> None:
        with path.open("rb") as stream:
            for _ in ijson.items(stream, "item"):
                break

    after, before = peak_mib(lambda: guarded_detect(path)), peak_mib(unguarded)
    report("nested_peak_memory", after / before, "<0.1", f"{before:.1f} -> {after:.2f} MiB")


def zip_bomb(folder: Path) -> None:
    path = folder / "bomb.zip"
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("manifest.json", "w") as out,
    ):
        out.write(b'{"format": "chats.archive", "pad": "')
        for _ in range(64):
            out.write(b"a" * MiB)
        out.write(b'"}')

    def unguarded() -> None:
        with zipfile.ZipFile(path) as archive:
            json.loads(archive.read("manifest.json"))

    after, before = peak_mib(lambda: guarded_detect(path)), peak_mib(unguarded)
    size = path.stat().st_size // 1024
    report(
        "zip_bomb_peak_memory",
        after / before,
        "<0.1",
        f"{size} KB zip: {before:.1f} -> {after:.2f} MiB",
    )


def nesting_overhead(folder: Path) -> None:
    data = json.dumps(json.loads(FIXTURE.read_text()) * 3000).encode()
    path = folder / "conversations.json"
    path.write_bytes(data)

    def guarded() -> None:
        with ImportSource(path) as source, source.open(None) as stream:
            for _ in records(stream, path.name):
                pass

    def unguarded() -> None:
        for _ in ijson.items(io.BytesIO(data), "item", use_float=True):
            pass

    before, after = seconds(unguarded), seconds(guarded)
    report(
        "nesting_check_overhead",
        after / before,
        "<=2.5",
        f"{len(data) / 1e6:.0f} MB: {before:.2f} -> {after:.2f} s",
    )


def tree_order() -> None:
    def record(messages: int, empty: int) -> dict:
        mapping: dict[str, dict] = {}
        parent = None
        for index in range(empty):
            mapping[f"e{index}"] = {"id": f"e{index}", "parent": parent, "message": None}
            parent = f"e{index}"
        for index in range(messages):
            message = {
                "author": {"role": "user"},
                "content": {"content_type": "text", "parts": [f"message {index}"]},
            }
            mapping[f"m{index}"] = {"id": f"m{index}", "parent": parent, "message": message}
            if not empty:
                parent = f"m{index}"  # one thread
        return {"id": "c", "title": "t", "mapping": mapping}

    chain, thread = record(3_000, 12_000), record(3_000, 0)
    after, baseline = (
        seconds(lambda: chatgpt.convert(chain)),
        seconds(lambda: chatgpt.convert(thread)),
    )
    report(
        "tree_order_chain_vs_thread",
        after / baseline,
        "<=3",
        f"thread {baseline:.2f} s, under 12,000 empty nodes {after:.2f} s",
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        nested(Path(folder))
        zip_bomb(Path(folder))
        nesting_overhead(Path(folder))
    tree_order()


if __name__ == "__main__":
    main()
