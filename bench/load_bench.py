"""Load on one node: many real websocket tabs (not browsers) against a production build.

Run: ``.venv/bin/python bench/load_bench.py [--users 50] [--tabs-per-user 4] [--streams 20]
[--workers 1] [--server app|granian] [--no-deflate] [--nodes 1] [--storage postgresql://…]``
(a few minutes; ``--workers 2`` runs two workers on a private Redis; ``--nodes 2 --storage
postgresql://…`` runs two app nodes, each with its own empty data folder, on that database
and a private Redis, every person's tabs spread over both: a reply streams from the node
running it to the other's tabs, a rename reaches tabs on both). Starts the production app
(``tests/support/app_server.start_app`` from a private copy, see
``bench/ui_bench.private_tree``), signs ``--users`` accounts in, and connects
``users x tabs-per-user`` socket.io clients that speak Reflex's protocol the way the page does
(hydrate, link the sidebar, open a chat: see ``tests/support/raw_client.py``), all on one asyncio
loop in this process. The app and its process group are stopped whatever happens.

Server: the app's own (``--server app``, the default:
``python -m chatsapp.hosting.server``, uvicorn, as ``scripts/run`` starts it), or Reflex's
stock production server as the baseline (``--server granian``: ``reflex run``). Tabs offer
permessage-deflate as browsers do (``--no-deflate``: they don't); neither server accepts it
(a compressor per socket is memory per tab).

Phases, each printing one line:

1. ``rss_per_idle_tab``: the app's RSS (every process of its group) before and after the tabs
   connect and settle, divided by the number of tabs. Goal ≤ 200 KB. Also split: a person's
   first tab (it opens their directory, chat file and runtime) and each further tab.
2. ``model_gap``: one reply streaming alone, watched by two tabs: the gap between streamed
   frames (the offline assistant writes a chunk every ``CHUNK_DELAY_S``): the model's own gap.
3. ``stream_under_load``: ``--streams`` users send at once; every tab of theirs watches. Time to
   first token (send → first frame with streamed text, at the sending tab) and inter-token gaps
   (between frames that carry new words, at every watching tab; a frame carries what the model
   wrote in one bridge flush). Goal: p95 gap ≤ 2 × the model's own gap (the same gap measured
   with one reply streaming alone).
4. ``sidebar_fanout``: one more account with ``--tabs-per-user x users`` tabs (default 200)
   besides the others; one tab renames a chat, timed until the *last* tab receives the row.
   Renames are ``FANOUT_PAUSE_S`` apart, past the sidebar's refresh throttle. Goal p95 ≤ 250 ms.
5. ``errors``: connection failures, timeouts, and error lines in the app log. Goal 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.config import PostgresLocation, parse_storage  # noqa: E402
from bench.browser_tabs import private_tree  # noqa: E402
from bench.socket_tabs import (  # noqa: E402
    CONNECT_AT_ONCE,
    TIMEOUT_S,
    ClientCollector,
    Person,
    Tab,
    connect,
    event,
    make_person,
)
from chatsapp.hosting.server import WEBSOCKET_PROTOCOL  # noqa: E402
from chatsapp.live.bridge import DIRECTORY_REFRESH_S  # noqa: E402
from chatsapp.live.run_pump import FLUSH_INTERVAL_S  # noqa: E402
from chatsapp.states.conversation import ChatTabState  # noqa: E402
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState  # noqa: E402
from chatsapp.states.shared_conversation import SharedConversationState  # noqa: E402
from tests.support import app_server  # noqa: E402
from tests.support.app_server import AppServer, start_app, start_redis  # noqa: E402
from tests.support.streamed_text import StreamedText  # noqa: E402

CHUNK_DELAY_S = 0.05  # the offline assistant's pace: one word per chunk
PROMPT = "Tell me about it"  # stopwords only: the same deterministic reply everywhere
FANOUT_SAMPLES, FANOUT_WARMUP = 12, 2
FANOUT_TIMEOUT_S = 20.0
# Renames this far apart each get the sidebar's immediate refresh: one sooner after the last is
# coalesced to the end of the throttle interval (chatsapp.live.bridge), which the bench would time.
FANOUT_PAUSE_S = 2 * DIRECTORY_REFRESH_S
GOAL_RSS_PER_TAB_KB = 200.0
GOAL_GAP_RATIO = 2.0
GOAL_FANOUT_MS = 250.0
CONVERSATION = SharedConversationState.get_full_name()
DIRECTORY = SharedDirectoryState.get_full_name()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def conversation_values(update: dict[str, Any]) -> dict[str, Any]:
    """The conversation state's part of an update's delta (``{}`` when it has none)."""
    return (update.get("delta") or {}).get(CONVERSATION, {})


def conversation_var(update: dict[str, Any], name: str) -> Any:
    return conversation_values(update).get(f"{name}_rx_state_")


# ── measurements ────────────────────────────────────────────────────


def group_rss_kb(pgid: int) -> int:
    """RSS of every process in the app's process group (kB, from /proc)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 of stat: pgrp
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total


@dataclass
class Stream:
    sent_at: float = 0.0
    first_at: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    gaps: list[float] = field(default_factory=list)  # between frames carrying new words
    words: int = 0  # of the reply, at the sending tab
    frames: int = 0  # streamed frames, at the sending tab


def watch_stream(tab: Tab, stream: Stream, *, sender: bool) -> Callable[[], None]:
    last: dict[str, Any] = {"at": 0.0, "words": 0}
    reply = StreamedText()

    def hook(update: dict[str, Any], at: float) -> None:
        if reply.apply(conversation_values(update)) and reply.text:
            words = len(reply.text.split())
            if sender and not stream.first_at:
                stream.first_at = at
            if last["at"] and words > last["words"]:
                stream.gaps.append(at - last["at"])
            last["at"], last["words"] = at, words
            if sender:
                stream.frames, stream.words = stream.frames + 1, words
        if sender and conversation_var(update, "streaming") is False and stream.first_at:
            stream.done.set()

    tab.hooks.append(hook)
    return lambda: tab.hooks.remove(hook)


async def stream_replies(people: list[Person]) -> list[Stream]:
    streams = [Stream() for _ in people]
    detach = []
    for person, stream in zip(people, streams, strict=True):
        for index, tab in enumerate(person.tabs):
            detach.append(watch_stream(tab, stream, sender=index == 0))
    try:
        for person, stream in zip(people, streams, strict=True):
            stream.sent_at = time.monotonic()
            await person.tabs[0].emit(event(ChatTabState, "send"), {"text": PROMPT})
        await asyncio.wait_for(asyncio.gather(*(s.done.wait() for s in streams)), TIMEOUT_S)
    finally:
        for undo in detach:
            undo()
    return streams


async def rename_fanout(person: Person, title: str) -> tuple[float | None, int]:
    """Seconds from the rename event until the last of ``person``'s other tabs has the row
    (``None`` and how many never got it, after ``FANOUT_TIMEOUT_S``)."""
    renamer, others = person.tabs[0], person.tabs[1:]
    pending = {id(tab) for tab in others}
    arrived = asyncio.Event()
    last_at = 0.0
    undo = []
    for tab in others:

        def hook(update: dict[str, Any], at: float, key: int = id(tab)) -> None:
            nonlocal last_at
            directory = (update.get("delta") or {}).get(DIRECTORY, {})
            if key in pending and title in json.dumps(directory):
                pending.discard(key)
                last_at = max(last_at, at)
                if not pending:
                    arrived.set()

        tab.hooks.append(hook)
        undo.append((tab, hook))
    try:
        start = {"chat_id": person.chat_id, "title": ""}
        await renamer.emit(event(SidebarTabState, "start_rename"), start)
        await renamer.emit(event(SidebarTabState, "set_edit_title"), {"value": title})
        sent_at = time.monotonic()
        await renamer.emit(event(SidebarTabState, "commit_rename"))
        try:
            await asyncio.wait_for(arrived.wait(), FANOUT_TIMEOUT_S)
        except TimeoutError:
            return None, len(pending)
        return last_at - sent_at, 0
    finally:
        for tab, hook in undo:
            tab.hooks.remove(hook)


# ── the run ─────────────────────────────────────────────────────────


async def probe(folder: Path | None, label: str) -> None:
    """Ask the app's memory probe (``bench/memprobe``) for a report, and wait for it."""
    if folder is None:
        return
    (folder / f"req-{label}").touch()
    deadline = time.monotonic() + TIMEOUT_S
    seen = -1
    while time.monotonic() < deadline:  # every Python process of the app answers
        await asyncio.sleep(2)
        answers = len(list(folder.glob(f"*-{label}.json")))
        if answers and answers == seen:
            return
        seen = answers


async def spread(
    apps: list[AppServer],
    people: list[Person],
    per: int,
    errors: list[str],
    *,
    deflate: bool,
    offset: int = 0,
) -> None:
    """``per`` more tabs of each person, tab ``k`` of person ``i`` on node ``(i + k) % n``."""
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)

    async def one(index: int, person: Person) -> None:
        async with gate:
            for k in range(per):
                app = apps[(index + offset + k) % len(apps)]
                await connect(app, person, 1, errors, deflate=deflate)

    await asyncio.gather(*(one(index, person) for index, person in enumerate(people)))


def nodes_rss_kb(apps: list[AppServer]) -> int:
    return sum(group_rss_kb(app.process.pid) for app in apps)


async def run(
    apps: list[AppServer],
    users: int,
    per: int,
    streams: int,
    *,
    deflate: bool,
    server: str,
    probe_dir: Path | None = None,
) -> list[str]:
    lines: list[str] = []
    errors: list[str] = []
    app = apps[0]
    people = [make_person(app, f"load{n:03d}") for n in range(users)]
    warm = make_person(app, "warmup")
    # Loads every module and cache; its two tabs on different nodes when there are two.
    await spread(apps, [warm], 2, errors, deflate=deflate)
    await asyncio.sleep(2)
    before = nodes_rss_kb(apps)
    await probe(probe_dir, "before")
    started = time.monotonic()
    # First one tab per person (what a person costs: their directory, chat and runtime), then
    # the others (what one more tab costs).
    await spread(apps, people, 1, errors, deflate=deflate)
    await asyncio.sleep(3)  # let background work of the connects finish
    middle = nodes_rss_kb(apps)
    await probe(probe_dir, "middle")
    await spread(apps, people, per - 1, errors, deflate=deflate, offset=1)
    connected = sum(len(p.tabs) for p in people)
    await asyncio.sleep(3)
    after = nodes_rss_kb(apps)
    await probe(probe_dir, "after")
    per_tab = (after - before) / max(connected, 1)
    first_tabs = (middle - before) / max(users, 1)
    more_tabs = (after - middle) / max(connected - users, 1)
    lines.append(
        f"rss_per_idle_tab: ratio={per_tab / GOAL_RSS_PER_TAB_KB:.2f} goal=<=1.0 "
        f"({per_tab:.0f} KB per tab: app RSS {before / 1024:.0f} MB -> {after / 1024:.0f} MB "
        f"with {connected} tabs of {users} users connected in "
        f"{time.monotonic() - started:.0f} s, hydrated, sidebar linked, a chat open; "
        f"a person's first tab {first_tabs:.0f} KB, each further tab {more_tabs:.0f} KB; "
        f"{server}, permessage-deflate {'offered' if deflate else 'not offered'})"
    )
    print(lines[-1], flush=True)

    (solo,) = await stream_replies([warm])
    model_gap = statistics.median(solo.gaps)
    lines.append(
        f"model_gap: {model_gap * 1000:.0f} ms median between streamed frames, one reply alone "
        f"({solo.words} words in {solo.frames} frames; offline assistant chunk delay "
        f"{CHUNK_DELAY_S * 1000:.0f} ms, bridge flush {FLUSH_INTERVAL_S * 1000:.0f} ms; "
        f"time to first token {(solo.first_at - solo.sent_at) * 1000:.0f} ms)"
    )
    print(lines[-1], flush=True)

    collector = ClientCollector()
    collector.settle()
    busy = await stream_replies(people[:streams])
    ttft = [(s.first_at - s.sent_at) * 1000 for s in busy]
    gaps = [g * 1000 for s in busy for g in s.gaps]
    p95_gap = percentile(gaps, 0.95)
    lines.append(
        f"stream_under_load: ratio={p95_gap / (model_gap * 1000) / GOAL_GAP_RATIO:.2f} goal=<=1.0 "
        f"(p95 inter-token gap {p95_gap:.0f} ms vs 2 x model gap {2 * model_gap * 1000:.0f} ms; "
        f"gaps p50 {percentile(gaps, 0.5):.0f} ms over {len(gaps)} frames at "
        f"{streams * per} watching tabs; time to first token p50 {percentile(ttft, 0.5):.0f} ms "
        f"p95 {percentile(ttft, 0.95):.0f} ms; {streams} replies at once, {connected} tabs "
        f"connected; the bench's longest own collection {collector.longest_ms:.0f} ms; "
        f"{load_average()})"
    )
    print(lines[-1], flush=True)

    crowd = make_person(app, "crowd")
    await spread(apps, [crowd], users * per, errors, deflate=deflate)
    samples = []
    collector.settle()
    for n in range(FANOUT_WARMUP + FANOUT_SAMPLES):
        await asyncio.sleep(FANOUT_PAUSE_S)
        took, missed = await rename_fanout(crowd, f"Renamed {n} {uuid.uuid4().hex[:6]}")
        if took is None:
            errors.append(f"rename {n}: {missed} of {len(crowd.tabs) - 1} tabs never got it")
        elif n >= FANOUT_WARMUP:
            samples.append(took * 1000)
    p95_fan = percentile(samples, 0.95) if samples else float("nan")
    lines.append(
        f"sidebar_fanout: ratio={p95_fan / GOAL_FANOUT_MS:.2f} goal=<=1.0 "
        f"(p95 {p95_fan:.0f} ms p50 {percentile(samples, 0.5):.0f} ms until the last of "
        f"{len(crowd.tabs) - 1} other tabs of one user receives a renamed row; "
        f"{len(samples)} renames timed; {connected + len(crowd.tabs)} tabs connected in all, "
        f"app RSS {nodes_rss_kb(apps) / 1024:.0f} MB; the bench's longest own collection "
        f"{collector.longest_ms:.0f} ms; {load_average()})"
    )
    print(lines[-1], flush=True)

    for person in [*people, warm, crowd]:
        await asyncio.gather(*(tab.close() for tab in person.tabs), return_exceptions=True)
    log = "\n".join(
        node.log_path.read_text(errors="replace") for node in apps if node.log_path.exists()
    )
    log_errors = [ln for ln in log.splitlines() if "Traceback" in ln or " ERROR" in ln]
    lines.append(
        f"errors: {len(errors) + len(log_errors)} goal=0 ({len(errors)} client-side, "
        f"{len(log_errors)} error lines in the app log"
        + (f"; first: {(errors + log_errors)[0][:200]}" if errors or log_errors else "")
        + ")"
    )
    print(lines[-1], flush=True)
    return lines


def load_average() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def server_label(server: str, workers: int, nodes: int = 1, storage: str = "sqlite") -> str:
    """What served the run, for its summary line (never the storage URL's password)."""
    if server == "granian":
        label = f"granian x{workers} (reflex run)"
    else:
        label = f"uvicorn x{workers} ({WEBSOCKET_PROTOCOL}, python -m chatsapp.hosting.server)"
    where = parse_storage(storage)
    engine = f"PostgreSQL {where.describe()}" if isinstance(where, PostgresLocation) else "SQLite"
    return f"{label}, {nodes} node(s) on {engine}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--tabs-per-user", type=int, default=4)
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument(
        "--workers", type=int, default=1, help="more than 1: that many workers on a private Redis"
    )
    parser.add_argument("--server", choices=sorted(app_server.SERVERS), default="app")
    parser.add_argument(
        "--probe",
        type=Path,
        help="a folder for the app's memory reports (bench/memprobe) before, between and after "
        "the tabs connect; PYTHONTRACEMALLOC=N in the environment adds its Python heap",
    )
    parser.add_argument(
        "--no-deflate", dest="deflate", action="store_false", help="tabs offer no compression"
    )
    parser.add_argument(
        "--nodes", type=int, default=1, help="app nodes (more than 1 needs --storage postgresql)"
    )
    parser.add_argument(
        "--storage", default="sqlite", help="CHATS_STORAGE of the nodes: sqlite or a URL"
    )
    args = parser.parse_args()
    storage = parse_storage(args.storage)
    if args.nodes > 1 and not isinstance(storage, PostgresLocation):
        parser.error("--nodes 2 needs --storage postgresql://…: nodes share no data folder")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="load-bench-") as tmp:
        base = Path(tmp)
        app_server.ROOT = private_tree(base / "app")
        env = {"CHATS_OFFLINE_CHUNK_DELAY_S": str(CHUNK_DELAY_S)}
        if isinstance(storage, PostgresLocation):
            env["CHATS_STORAGE"] = os.environ["CHATS_STORAGE"] = storage.url
        launcher, workers_variable = app_server.SERVERS[args.server]
        env[workers_variable] = str(args.workers)
        if args.probe is not None:
            args.probe.mkdir(parents=True, exist_ok=True)
            env["CHATS_MEMPROBE_DIR"] = str(args.probe.resolve())
            paths = [str(ROOT / "bench/memprobe"), env.get("PYTHONPATH", "")]
            env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        redis = start_redis(base) if args.workers > 1 or args.nodes > 1 else None
        if redis is not None:
            env.update(REFLEX_REDIS_URL=redis.url)
        apps: list[AppServer] = []
        try:
            for n in range(args.nodes):  # each node a data folder of its own
                (base / f"data-{n}").mkdir()
                apps.append(
                    start_app(
                        base / f"data-{n}", base / f"app-{n}.log", env=env, mode="prod",
                        launcher=launcher,
                    )
                )  # fmt: skip
            label = server_label(args.server, args.workers, args.nodes, args.storage)
            sizes = (args.users, args.tabs_per_user, args.streams)
            try:
                asyncio.run(
                    run(apps, *sizes, deflate=args.deflate, server=label, probe_dir=args.probe)
                )
            except BaseException:
                for app in apps:
                    print(f"app log tail:\n{app.log_tail()}", file=sys.stderr)
                raise
        finally:
            for app in apps:
                app.stop()
            if redis is not None:
                redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
