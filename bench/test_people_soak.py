"""A server that runs for months (issue 14): many people sign in and out, in-process.

Each person connects a tab, opens their directory, runtime and agent library, writes a chat
and leaves. With the release (``bridge.DIRECTORY_GRACE_S`` shortened) the process's open
descriptors, threads and RSS must stay on a plateau from the warm-up on; kept open (the
release disabled) they grow with every person, which the second run prints for comparison.

The services and the bridge are the real ones; the Reflex app is the stand-in of the bridge's
unit tests (no websockets: ``test_ws_soak`` covers those). Figures are printed with ``-s``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from backend.config import Settings
from chatsapp import bridge
from chatsapp import services as services_module
from chatsapp.services import Services
from tests.ui.test_bridge_pumps import FakeApp, View, until

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
    for name in (
        "_pumps",
        "_watchers",
        "_tab_watching",
        "_releases",
        "_watched_directories",
        "_user_tabs",
        "_tab_user",
        "_directory_releases",
        "_refreshes",
    ):
        monkeypatch.setattr(bridge, name, {})
    monkeypatch.setattr(bridge, "_tasks", set())
    monkeypatch.setattr(bridge, "DIRECTORY_REFRESH_S", 0.0)
    bridge.install(
        FakeApp(),
        bridge.LiveStates(
            directory=View, memory=View, conversation=View, archive=View, chat_settings=View
        ),
    )
    return served


async def sign_in_and_out(served: Services, person: int) -> None:
    user_id = f"person{person}"
    served.tab_opened(user_id, f"tab-{person}")
    served.directory(user_id).create_chat(f"Chat of {person}")
    served.runtime(user_id)
    served.agents(user_id)
    bridge.tab_left(f"tab-{person}")


def settled(served: Services) -> bool:
    return served.footprint()["directories"] == 0 and not bridge.footprint()["tasks"]


async def test_people_signing_in_and_out_keep_the_server_on_a_plateau(
    served: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bridge, "DIRECTORY_GRACE_S", 0.01)
    seen: dict[int, tuple[int, int, int]] = {}
    started = time.monotonic()
    for start in range(0, PEOPLE, CHECKPOINT_EVERY):
        for person in range(start, start + CHECKPOINT_EVERY):
            await sign_in_and_out(served, person)
        await until(lambda: settled(served))
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
    served: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bridge, "DIRECTORY_GRACE_S", 3600.0)
    before = figures()
    for person in range(KEPT_OPEN_PEOPLE):
        await sign_in_and_out(served, person)
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
