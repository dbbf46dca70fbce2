"""A server that runs for months (issue 14), over real websockets: 2,000 chats opened and closed.

A production build; one signed-in person opens 2,000 chats, each in a tab of its own (a
socket.io client speaking Reflex's protocol, ``bench/socket_tabs.Tab``) that closes again, a
few at a time, in rounds of 500. Every other tab closes as soon as its page is hydrated, while
the server is still opening its chat (a tab closed at once, a dropped network): the server then
finishes opening the chat after the socket closed, which must pin nothing. After each round
the run waits out Reflex's state expiry and the bridge's grace periods, then prints the app's
open descriptors, threads and RSS (every process of its group; ``-s``). The rounds after the
first (the warm-up) must stay on its plateau.

Reflex keeps a closed tab's state in memory until ``redis_token_expiration`` (an hour by
default); the run sets ``REFLEX_REDIS_TOKEN_EXPIRATION`` to 20 s so the plateau shows within
the run (a deployment chooses the same trade-off: a tab that comes back after the expiry
re-hydrates from storage, which this app does on every page load anyway). Each round has the
same shape, so each holds the same number of states at its peak: RSS measures what is kept,
not a larger burst.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats import Chats
from bench.load_bench import group_rss_kb
from bench.socket_tabs import Tab
from tests.support.app_server import AppServer, start_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CHATS = 2_000
AT_ONCE = 10
ROUND = 500
TOKEN_EXPIRATION_S = 20
SETTLE_S = TOKEN_EXPIRATION_S + 10  # the expiry, the pumps' 5 s grace, a margin
FD_WOBBLE = 3 * AT_ONCE + 9  # sockets of tabs in flight, plus chat files swapping in the LRU
MAX_RSS_GROWTH_RATIO = 1.15


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("ws-soak")
    (base / "data").mkdir()
    server = start_app(
        base / "data",
        base / "app.log",
        mode="prod",
        env={
            "CHATS_OFFLINE_CHUNK_DELAY_S": "0",
            "REFLEX_REDIS_TOKEN_EXPIRATION": str(TOKEN_EXPIRATION_S),
        },
    )
    yield server
    server.stop()


def descriptors(pgid: int) -> tuple[int, int]:
    """Open descriptors and threads of every process in the group."""
    fds = threads = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            fds += len(list((entry / "fd").iterdir()))
            threads += int(fields[17])  # field 20 of stat: num_threads
        except (OSError, ValueError, IndexError):
            continue
    return fds, threads


async def test_opening_and_closing_2000_chats_keeps_the_server_on_a_plateau(app: AppServer):
    token = app.session_token("soak")
    user_id = app.user_id("soak")
    with Chats(app.data_dir, user_id) as chats:
        chat_ids = [chats.create_chat(f"Soak {n}").id for n in range(CHATS)]
    pgid = app.process.pid
    gate = asyncio.Semaphore(AT_ONCE)

    async def visit(n: int, chat_id: str) -> None:
        async with gate:
            tab = Tab(app.backend_url, token, f"/chat/{chat_id}")
            try:
                if n % 2:
                    await tab.open(settle=False)
                    await tab.until_hydrated()  # closed while its chat is being opened
                else:
                    await tab.open()
            finally:
                await tab.close()

    figures: dict[int, tuple[int, int, int]] = {}
    started = time.monotonic()
    for start in range(0, CHATS, ROUND):
        await asyncio.gather(*(visit(n, c) for n, c in enumerate(chat_ids[start : start + ROUND])))
        await asyncio.sleep(SETTLE_S)
        done = start + ROUND
        fds, threads = descriptors(pgid)
        figures[done] = (fds, threads, group_rss_kb(pgid))
        print(
            f"{done:5d} chats opened and closed in {time.monotonic() - started:5.0f} s: "
            f"{fds} descriptors, {threads} threads, RSS {figures[done][2] / 1024:.0f} MB",
            flush=True,
        )
    base_fds, _threads, base_rss = figures[ROUND]
    end_fds, _threads, end_rss = figures[CHATS]
    print(
        f"soak: RSS after {CHATS} chats / after the first {ROUND}: {end_rss / base_rss:.2f} "
        f"(goal <= {MAX_RSS_GROWTH_RATIO}); descriptors {base_fds} -> {end_fds}",
        flush=True,
    )
    assert end_fds <= base_fds + FD_WOBBLE, figures
    assert end_rss <= base_rss * MAX_RSS_GROWTH_RATIO, figures
