"""A chat's event log is released once nobody watches it and the chat is idle (issue 14).

Every chat ever opened used to keep its event log until the process ended. Now the log lives
while the chat is open in the runtime or watched; the last watcher of an idle, released chat
drops it, and watching again starts a fresh log that replays nothing stale.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from backend.runtime.working_chats import MAX_IDLE_CONVERSATIONS
from tests.runtime.helpers import TERMINAL, make_runtime
from tests.support.deadlines import until
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


async def _answered(runtime, chat_id: str, text: str) -> None:
    ticket = await runtime.send_message(chat_id, text)
    async with contextlib.aclosing(runtime.subscribe(chat_id)) as events:
        async for event in events:
            if event.run_id == ticket.run_id and event.type in TERMINAL:
                break
    await runtime.wait_idle(chat_id)


class TestEventLogsAreReleased:
    async def test_watching_a_chat_never_written_keeps_its_log_only_while_watched(
        self, chats, open_runtime
    ):
        runtime = open_runtime(ScriptedModel())
        chat_id = chats.create_chat().id
        watching = runtime.subscribe(chat_id)
        first = asyncio.ensure_future(anext(watching))
        try:
            await until(lambda: runtime.footprint().watchers == 1)  # the subscription started
            assert runtime.footprint().event_logs == 1
        finally:
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first
            await watching.aclose()
        assert runtime.footprint().event_logs == 0
        assert runtime.footprint().watchers == 0

    async def test_logs_of_chats_released_from_the_runtime_are_dropped_once_unwatched(
        self, chats, open_runtime
    ):
        runtime = open_runtime(ScriptedModel(default="ok"))
        for n in range(MAX_IDLE_CONVERSATIONS + 8):
            await _answered(runtime, chats.create_chat().id, f"hello {n}")
        footprint = runtime.footprint()
        await runtime.shutdown()
        assert footprint.open_chats == MAX_IDLE_CONVERSATIONS
        assert footprint.event_logs == MAX_IDLE_CONVERSATIONS
        assert footprint.watchers == 0

    async def test_a_watched_chat_keeps_its_log_after_its_entry_is_released(self, tmp_path, chats):
        runtime = make_runtime(tmp_path, chats, ScriptedModel(default="ok"))
        watched = chats.create_chat().id
        ticket = await runtime.send_message(watched, "first")
        events = runtime.subscribe(watched)
        try:
            seen = [await anext(events)]
            while not (seen[-1].run_id == ticket.run_id and seen[-1].type in TERMINAL):
                seen.append(await anext(events))
            for n in range(MAX_IDLE_CONVERSATIONS + 2):  # push the watched chat out
                await _answered(runtime, chats.create_chat().id, f"other {n}")
            second = await runtime.send_message(watched, "second")
            later = [await anext(events)]
            while not (later[-1].run_id == second.run_id and later[-1].type in TERMINAL):
                later.append(await anext(events))
        finally:
            await events.aclose()
            await runtime.shutdown()
        # One log throughout: numbering went on, nothing was replayed twice.
        assert [e.seq for e in later] == list(range(seen[-1].seq + 1, later[-1].seq + 1))
        assert later[0].type == "run.queued"
