"""The conversation view follows a chat from its run events alone, and agrees with a read.

``run.queued`` carries the messages it stored and ``run.completed`` the finished reply
(``backend.runtime.events``); the view advances its window from them
(``backend.transcript.extended_window`` / ``updated_window``) instead of reading rows this
process just wrote. Whatever it computes must equal what a read of the chat gives then (the
send time aside: the event's clock is read a moment after the row's); where it cannot know,
it says so and the view reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from backend.config import Settings
from backend.messages import WrittenMessage
from backend.runtime import PublishedRunEvent, RunCompleted, RunQueued
from backend.transcript import TranscriptWindow, extended_window, load_window, updated_window
from chatsapp.services import Services
from tests.support.deadlines import until
from tests.support.run_events import watching

pytestmark = pytest.mark.anyio
USER = "alice"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Services]:
    env = {"CHATS_DATA_DIR": str(tmp_path), "CHATS_OFFLINE_CHUNK_DELAY_S": "0"}
    yield Services(Settings.from_env(env))


def read(served: Services, chat_id: str, **bounds: int) -> TranscriptWindow:
    return load_window(served.directory(USER).get_chat(chat_id).reader, **bounds)


def unstamped(window: TranscriptWindow | None) -> TranscriptWindow | None:
    if window is None:
        return None
    entries = tuple(replace(e, sent_at=0) for e in window.entries)
    return replace(window, entries=entries, total_bytes=0)


def advanced(
    window: TranscriptWindow, event: PublishedRunEvent, **bounds: int
) -> TranscriptWindow | None:
    match event.payload:
        case RunCompleted(written=WrittenMessage() as reply):
            return updated_window(window, reply, **bounds)
        case RunQueued(written=written):
            return extended_window(window, written, **bounds)
    return window


def queued_of(events: list[PublishedRunEvent], run_id: str) -> RunQueued:
    return next(
        e.payload for e in events if isinstance(e.payload, RunQueued) and e.run_id == run_id
    )


async def send_and_follow(
    served: Services, chat_id: str, window: TranscriptWindow, text: str, **bounds: int
) -> TranscriptWindow | None:
    """Send ``text``; the window advanced from its run.queued and run.completed."""
    runtime = served.runtime(USER)
    async with watching(served.runtime(USER), chat_id) as events:
        ticket = await runtime.send_message(chat_id, text)
        await runtime.wait_idle(chat_id)
        await until(
            lambda: any(e.type == "run.completed" and e.run_id == ticket.run_id for e in events)
        )
    shown: TranscriptWindow | None = window
    for event in (e for e in events if e.run_id == ticket.run_id):
        shown = advanced(shown, event, **bounds) if shown is not None else None
    return shown


class TestTheViewAgreesWithARead:
    async def test_sends_and_replies_shown_from_events_equal_the_window_read(self, served) -> None:
        chat = served.directory(USER).create_chat().id
        shown: TranscriptWindow | None = read(served, chat)
        for turn in range(3):
            assert shown is not None
            shown = await send_and_follow(served, chat, shown, f"message {turn}")
            assert unstamped(shown) == unstamped(read(served, chat))
        assert shown is not None and shown.message_count == 6
        assert shown.entries[-1].text and shown.entries[-1].status == ""
        assert shown.entries[-1].model  # the reply's model came with the event

    @pytest.mark.parametrize(
        "bounds", [{"max_messages": 3}, {"byte_budget": 400}], ids=["by count", "by bytes"]
    )
    async def test_a_window_cut_at_its_bounds_is_cut_as_a_read_cuts_it(
        self, served, bounds
    ) -> None:
        chat = served.directory(USER).create_chat().id
        shown: TranscriptWindow | None = read(served, chat, **bounds)
        for turn in range(3):
            assert shown is not None
            shown = await send_and_follow(served, chat, shown, f"message {turn}", **bounds)
            assert unstamped(shown) == unstamped(read(served, chat, **bounds))
        assert shown is not None and shown.has_earlier

    async def test_a_regeneration_is_not_guessed_the_view_reads(self, served) -> None:
        chat = served.directory(USER).create_chat().id
        runtime = served.runtime(USER)
        await runtime.send_message(chat, "hello")
        await runtime.wait_idle(chat)
        window = read(served, chat)
        async with watching(served.runtime(USER), chat) as events:
            ticket = await runtime.regenerate(chat, window.entries[-1].id)
            await runtime.wait_idle(chat)
        queued = queued_of(events, ticket.run_id)
        assert [w.id for w in queued.written] == [ticket.assistant_message_id]
        # A sibling of the shown reply: its place among siblings needs a read.
        assert extended_window(window, queued.written) is None

    async def test_a_replayed_run_queued_is_not_shown_twice(self, served) -> None:
        chat = served.directory(USER).create_chat().id
        runtime = served.runtime(USER)
        async with watching(served.runtime(USER), chat) as events:
            ticket = await runtime.send_message(chat, "hello")
            await runtime.wait_idle(chat)
        # A pump that comes back replays the log: the messages are on screen already.
        assert extended_window(read(served, chat), queued_of(events, ticket.run_id).written) is None

    async def test_a_message_sent_below_an_older_message_is_not_guessed(self, served) -> None:
        chat = served.directory(USER).create_chat().id
        runtime = served.runtime(USER)
        for text in ("one", "two"):
            await runtime.send_message(chat, text)
            await runtime.wait_idle(chat)
        window = read(served, chat)
        async with watching(served.runtime(USER), chat) as events:
            ticket = await runtime.send_message(chat, "branch", parent_id=window.entries[1].id)
            await runtime.wait_idle(chat)
        assert extended_window(window, queued_of(events, ticket.run_id).written) is None
