"""Portability benchmarks: import rate, import memory on a 500 MB file, export rate.

Run: ``.venv/bin/python bench/portability_bench.py`` (several minutes: it writes and imports
a 500 MB file; ``--quick`` runs smaller sizes). Prints one line per metric (format in
bench/README.md); each baseline runs beside the measured code in this process.

1. ``import_vs_append``: importing a generated 10,000-conversation ChatGPT export (branches
   included) vs creating the same chats and writing the same messages with plain
   ``append_message`` (goal: import ≤ 1.5× the appends).
2. ``import_peak_rss_500mb``: peak RSS of a fresh process importing a generated ~500 MB
   ``conversations.json`` (ratio to the 128 MB goal; the file size is shown beside it). The
   file lives in a temp dir and is deleted after.
3. ``export_100k_messages``: exporting 100,000 messages (100 chats × 1,000) to a ``.zip`` vs
   reading the same messages with ``Session.tree()`` alone (goal ≤ 3×: the export is the
   read plus JSON and deflate).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.chats import Chats  # noqa: E402
from backend.portability import all_chat_ids, import_file, write_zip_export  # noqa: E402

SEED = 13
RSS_GOAL_MB = 128
BIG_FILE_BYTES = 500 * 1024 * 1024


def report(metric: str, ratio: float, goal: str, details: str) -> None:
    print(f"{metric}: ratio={ratio:.2f} goal={goal} ({details})", flush=True)


# ── a generated ChatGPT export ──────────────────────────────────────


def conversation(index: int, rng: random.Random, turns: int, text_bytes: int) -> dict:
    """A ChatGPT conversation: an empty root, ``turns`` user/assistant pairs and one edit."""
    base = 1_700_000_000 + index * 100
    mapping: dict[str, dict] = {
        "root": {"id": "root", "message": None, "parent": None, "children": []}
    }
    parent = "root"
    leaf = "root"
    for turn in range(turns * 2):
        node = f"c{index}-n{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        words = " ".join(f"w{rng.randrange(5000)}" for _ in range(max(1, text_bytes // 6)))
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": base + turn,
                "content": {"content_type": "text", "parts": [words[:text_bytes]]},
                "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
                "recipient": "all",
            },
        }
        mapping[parent]["children"].append(node)
        parent = leaf = node
    edit = f"c{index}-edit"  # a sibling of the first user message: a second branch
    mapping[edit] = {
        "id": edit,
        "parent": "root",
        "children": [],
        "message": {
            "id": edit,
            "author": {"role": "user"},
            "create_time": base + 99,
            "content": {"content_type": "text", "parts": ["an edited question"]},
            "metadata": {},
        },
    }
    mapping["root"]["children"].append(edit)
    return {
        "id": f"conv-{index}",
        "title": f"Conversation {index}",
        "create_time": base,
        "update_time": base + 99,
        "current_node": leaf,
        "mapping": mapping,
    }


def write_export(path: Path, conversations: Iterator[dict]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for record in conversations:
            out.write(("," if count else "") + json.dumps(record))
            count += 1
        out.write("]")
    return count


def messages_of(record: dict) -> Iterator[tuple[dict, str | None]]:
    """The messages the importer writes for ``record``, as plain appends would (same order)."""
    for node_id, node in record["mapping"].items():
        message = node["message"]
        if message is None:
            continue
        parent = node["parent"] if node["parent"] != "root" else None
        yield (
            {
                "id": node_id,
                "role": message["author"]["role"],
                "parts": [{"type": "text", "text": message["content"]["parts"][0]}],
            },
            parent,
        )


# ── 1. import vs plain appends ──────────────────────────────────────


def import_vs_append(conversations: int) -> None:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        records = [conversation(i, rng, turns=3, text_bytes=200) for i in range(conversations)]
        export = root / "conversations.json"
        write_export(export, iter(records))
        with Chats(root / "appended", "u") as chats:
            started = time.perf_counter()
            for record in records:
                session = chats.get_chat(chats.create_chat(record["title"]).id).session
                for message, parent in messages_of(record):
                    session.append_message(message, parent_id=parent)
            append_s = time.perf_counter() - started
            messages = sum(1 for r in records for _ in messages_of(r))
        with Chats(root / "imported", "u") as chats:
            started = time.perf_counter()
            result = import_file(chats, export)
            import_s = time.perf_counter() - started
        assert result.imported == conversations and result.ok, result.summary()
    report(
        "import_vs_append",
        import_s / append_s,
        "<=1.5",
        f"{conversations} conversations, {messages} messages: import {import_s:.1f} s "
        f"({messages / import_s:,.0f} msg/s), plain appends {append_s:.1f} s "
        f"({messages / append_s:,.0f} msg/s)",
    )


# ── 2. peak RSS importing a 500 MB file ─────────────────────────────

_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[3])
from backend.chats import Chats
from backend.portability import import_file
with Chats(sys.argv[1], "u") as chats:
    started = time.perf_counter()
    report = import_file(chats, sys.argv[2])
    took = time.perf_counter() - started
# VmHWM: the high-water mark of this process's own memory map. (ru_maxrss would also count
# the parent's, recorded at exec: the benchmark's parent holds every generated record.)
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
print(peak_kb, report.imported, report.messages, len(report.failures), took)
"""


def import_peak_rss(target_bytes: int) -> None:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        export = root / "conversations.json"

        def records() -> Iterator[dict]:
            index, written = 0, 0
            while written < target_bytes:
                record = conversation(index, rng, turns=10, text_bytes=2_500)
                written += len(json.dumps(record))
                index += 1
                yield record

        count = write_export(export, records())
        size = export.stat().st_size
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root / "data"), str(export), str(ROOT)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    peak_mb = int(out[0]) / 1024
    imported, messages, failed, took = int(out[1]), int(out[2]), int(out[3]), float(out[4])
    assert imported == count and failed == 0
    report(
        f"import_peak_rss_{size // (1024 * 1024)}mb",
        peak_mb / RSS_GOAL_MB,
        f"<=1.0 ({RSS_GOAL_MB} MB)",
        f"peak RSS {peak_mb:.0f} MB importing a {size / 1024 / 1024:.0f} MB file: "
        f"{count} conversations, {messages} messages in {took:.0f} s",
    )


# ── 3. export rate ──────────────────────────────────────────────────


def export_rate(chats_count: int, per_chat: int) -> None:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        with Chats(root / "data", "u") as chats:
            for c in range(chats_count):
                chat = chats.get_chat(chats.create_chat(f"chat {c}").id)
                with chat.database.transaction():
                    for m in range(per_chat):
                        text = " ".join(f"w{rng.randrange(5000)}" for _ in range(30))
                        chat.session.import_message(
                            {
                                "id": f"m{m}",
                                "role": "user",
                                "parts": [{"type": "text", "text": text}],
                            },
                            parent_id=f"m{m - 1}" if m else None,
                            created_at=1_700_000_000_000 + m,
                        )
            ids = all_chat_ids(chats)
            started = time.perf_counter()
            read = sum(1 for chat_id in ids for _ in chats.get_chat(chat_id).session.tree())
            read_s = time.perf_counter() - started
            started = time.perf_counter()
            write_zip_export(chats, ids, str(root / "export.zip"))
            export_s = time.perf_counter() - started
            size = (root / "export.zip").stat().st_size
    report(
        f"export_{read // 1000}k_messages",
        export_s / read_s,
        "<=3.0",
        f"export {export_s:.1f} s ({read / export_s:,.0f} msg/s, {size / 1e6:.0f} MB zip) "
        f"vs reading them {read_s:.1f} s",
    )


def main() -> None:
    quick = "--quick" in sys.argv
    import_vs_append(1_000 if quick else 10_000)
    export_rate(10 if quick else 100, 1_000)
    import_peak_rss(50 * 1024 * 1024 if quick else BIG_FILE_BYTES)


if __name__ == "__main__":
    main()
