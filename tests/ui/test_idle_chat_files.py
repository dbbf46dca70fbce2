"""A person who stays connected keeps open only the chat files in use, not every chat they read.

Same stand-ins as ``test_bridge_pumps`` (a real runtime and directory in ``tmp_path``, a fake
Reflex app). Before this pass a person's runtime kept up to 32 idle chats and their directory
up to 64 files (~150 KB of SQLite heap and 3 descriptors each) for as long as a tab of theirs
stayed connected.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from chatsapp.services import Services
from tests.support.bridge_views import USER, files_open_under, new_chat, watchers
from tests.support.deadlines import until

pytestmark = pytest.mark.anyio


def chat_file(served: Services, chat_id: str) -> Path:
    chats = served.directory(USER)
    return chats.layout.chat_path(chat_id, chats.get_chat(chat_id).generation)


async def written_chat(served: Services) -> str:
    chat_id = new_chat(served)
    runtime = served.runtime(USER)
    await runtime.send_message(chat_id, "hello")
    await runtime.wait_idle(chat_id)
    return chat_id


class TestIdleChatFiles:
    async def test_the_chat_a_tab_shows_stays_open_and_the_chats_it_left_are_closed(
        self, live
    ) -> None:
        served, app = live
        left = [await written_chat(served) for _ in range(3)]
        shown = await written_chat(served)
        for chat_id in [*left, shown]:  # the tab reads one chat after another
            served.conversation_opened(USER, chat_id, "tab-1")
            await until(lambda shows=(USER, chat_id): app.bridge.watched_chat("tab-1") == shows)
        await until(lambda: app.bridge.footprint()["pumps"] == 1 and watchers(served) == 1)
        assert all(files_open_under(chat_file(served, c)) for c in [*left, shown])

        gc.collect()  # the handles the runtime let go of (their pins are weak)
        closed = await served.close_idle_chat_files(0.0)

        assert closed == 3
        assert [files_open_under(chat_file(served, c)) for c in left] == [0, 0, 0]
        assert files_open_under(chat_file(served, shown)) > 0
        reply = await asyncio.wait_for(served.runtime(USER).send_message(left[0], "again"), 10)
        assert reply  # a closed chat opens again on its next use

    async def test_files_used_within_the_idle_time_stay_open(self, live) -> None:
        served, _app = live
        chat_id = await written_chat(served)
        assert await served.close_idle_chat_files(3600.0) == 0
        assert files_open_under(chat_file(served, chat_id)) > 0

    async def test_the_server_runs_the_pass_while_it_serves(self) -> None:
        from chatsapp.chatsapp import app

        names = [getattr(task, "__name__", "") for task in app.get_lifespan_tasks()]
        assert "_close_idle_chat_files" in names
