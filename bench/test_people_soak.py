"""A server that runs for months (issue 14): many people sign in and out, in-process.

Each person connects a tab, opens their directory, runtime and agent library, writes a chat
and leaves. With the release (the bridge's ``directory_grace_s`` shortened) the process's open
descriptors, threads and RSS must stay on a plateau from the warm-up on; kept open (the
release disabled) they grow with every person, which the second run prints for comparison.

The services and the bridge are the real ones; the Reflex app is the stand-in of the bridge's
unit tests (no websockets: ``test_ws_soak`` covers those). Figures are printed with ``-s``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config import Settings
from chatsapp import services as services_module
from chatsapp.live.bridge import LiveBridge
from chatsapp.services import Services
from tests.support.bridge_views import View, ViewStates
from tests.support.deadlines import until
from tests.support.fake_reflex_app import FakeReflexApp, every_view
from tests.support.sqlite_heap import sqlite_heap_bytes

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PEOPLE = 600
CHECKPOINT_EVERY = 100
WARM_UP = 200
KEPT_OPEN_PEOPLE = 300
FD_WOBBLE = 5
MAX_RSS_GROWTH_RATIO = 1.10
MAX_THREAD_GROWTH = 2  # the offload pool may still grow to its size


def figures() -> tuple[int, int, int]:
    """Open descriptors, threads and RSS (KB) of this process."""
    rss = next(
        int(line.split()[1])
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    return len(os.listdir("/proc/self/fd")), threading.active_count(), rss


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Services:
    settings = Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)})
    served = Services(settings)
    monkeypatch.setattr(services_module, "_services", served)
    return served


@pytest.fixture
def live(served: Services) -> Iterator[LiveBridge]:
    views = every_view(View)
    bridge = LiveBridge(FakeReflexApp(state_manager=ViewStates()), views, served)  # type: ignore[arg-type]
    bridge.directory_refresh_s = 0.0
    bridge.install()
    yield bridge
    bridge.stop()


async def sign_in_and_out(served: Services, live: LiveBridge, person: int) -> None:
    user_id = f"person{person}"
    served.tab_opened(user_id, f"tab-{person}")
    served.directory(user_id).create_chat(f"Chat of {person}")
    served.runtime(user_id)
    served.agents(user_id)
    live.tab_left(f"tab-{person}")


def settled(served: Services, live: LiveBridge) -> bool:
    return served.footprint()["directories"] == 0 and not live.footprint()["tasks"]


async def test_people_signing_in_and_out_keep_the_server_on_a_plateau(
    served: Services, live: LiveBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    live.directory_grace_s = 0.01
    seen: dict[int, tuple[int, int, int]] = {}
    started = time.monotonic()
    for start in range(0, PEOPLE, CHECKPOINT_EVERY):
        for person in range(start, start + CHECKPOINT_EVERY):
            await sign_in_and_out(served, live, person)
        await until(lambda: settled(served, live))
        done = start + CHECKPOINT_EVERY
        seen[done] = figures()
        fds, threads, rss = seen[done]
        print(
            f"{done:4d} people in and out in {time.monotonic() - started:4.1f} s: {fds} "
            f"descriptors, {threads} threads, RSS {rss / 1024:.0f} MB, open {served.footprint()}",
            flush=True,
        )
    base_fds, base_threads, base_rss = seen[WARM_UP]
    end_fds, end_threads, end_rss = seen[PEOPLE]
    assert end_fds <= base_fds + FD_WOBBLE, seen
    assert end_threads <= base_threads + MAX_THREAD_GROWTH, seen
    assert end_rss <= base_rss * MAX_RSS_GROWTH_RATIO, seen


async def test_kept_open_for_comparison_they_grow_with_every_person(
    served: Services, live: LiveBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    live.directory_grace_s = 3600.0
    before = figures()
    for person in range(KEPT_OPEN_PEOPLE):
        await sign_in_and_out(served, live, person)
    fds, threads, rss = figures()
    print(
        f"kept open, {KEPT_OPEN_PEOPLE} people: +{fds - before[0]} descriptors, "
        f"+{threads - before[1]} threads, +{(rss - before[2]) / 1024:.0f} MB RSS "
        f"({(rss - before[2]) / KEPT_OPEN_PEOPLE:.0f} KB a person)",
        flush=True,
    )
    assert served.footprint()["directories"] == KEPT_OPEN_PEOPLE
    for user_id in [f"person{person}" for person in range(KEPT_OPEN_PEOPLE)]:
        await served.release_idle(user_id, 0.0)


READERS = 20
CHATS_READ = 40


async def test_people_who_stay_keep_only_the_chat_files_in_use(
    served: Services, live: LiveBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """People stay connected and read chat after chat: what they hold before and after the
    pass that closes chat files unused for a while (``Services.close_idle_chat_files``)."""
    live.release_grace_s = 0.0  # a pump goes as its tab moves on
    people = [f"reader{n}" for n in range(READERS)]
    before, heap_before = figures(), sqlite_heap_bytes()
    chats: dict[str, list[str]] = {}
    for user_id in people:
        directory = served.directory(user_id)
        chats[user_id] = []
        for n in range(CHATS_READ):
            chat = directory.get_chat(directory.create_chat(f"Chat {n}").id)
            for m in range(10):
                text = {"type": "text", "text": f"message {m} " + "word " * 40}
                chat.session.append_message({"id": f"m{m}", "role": "user", "parts": [text]})
            chats[user_id].append(chat.id)
    for user_id in people:
        tab = f"tab-{user_id}"
        served.tab_opened(user_id, tab)
        for chat_id in chats[user_id]:
            served.conversation_opened(user_id, chat_id, tab)
            await until(lambda u=user_id, c=chat_id, t=tab: live.watched_chat(t) == (u, c))
    await until(lambda: live.footprint()["pumps"] == READERS)
    read, heap_read = figures(), sqlite_heap_bytes()
    closed = await served.close_idle_chat_files(0.0)
    after, heap_after = figures(), sqlite_heap_bytes()
    print(
        f"{READERS} people each wrote and read {CHATS_READ} chats, one tab each still open: "
        f"+{read[0] - before[0]} descriptors, SQLite heap +{(heap_read - heap_before) >> 20} MB, "
        f"RSS +{(read[2] - before[2]) / 1024:.0f} MB; the pass closed {closed} files: "
        f"+{after[0] - before[0]} descriptors, SQLite heap +{(heap_after - heap_before) >> 20} "
        f"MB, RSS +{(after[2] - before[2]) / 1024:.0f} MB (the chat each tab shows stays open; "
        "the allocator keeps most freed pages for reuse)",
        flush=True,
    )
    assert closed >= READERS * (CHATS_READ - 1) * 0.9
    # Each person's directory and the chat their tab shows (3 files each), and a little slack.
    assert after[0] - before[0] <= READERS * 7
