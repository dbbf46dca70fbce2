"""Watching a chat's run events from a test, as a tab's pump does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from backend.runtime import ChatRuntime, PublishedRunEvent


@contextlib.asynccontextmanager
async def watching(runtime: ChatRuntime, chat_id: str) -> AsyncIterator[list[PublishedRunEvent]]:
    """The chat's run events (those buffered, then live), collected while the block runs."""
    events: list[PublishedRunEvent] = []

    async def collect() -> None:
        async for event in runtime.subscribe(chat_id):
            events.append(event)

    task = asyncio.ensure_future(collect())
    try:
        yield events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
