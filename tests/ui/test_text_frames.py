"""A streamed reply's newest text goes straight to the tabs each process says show the chat.

Two :class:`TextFrames` stand for two processes (workers or nodes) on one real Redis; what
each would hand its own sockets is recorded instead of sent (``send_here``). Each process
decides for its own tabs from its own bookkeeping (the bridge's ``tabs_watching``), so a tab
that left the chat on its process gets nothing more of it, whichever process streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from chatsapp.live import text_frames
from chatsapp.live.text_frames import TextFrames
from chatsapp.states.shared_conversation import SharedConversationState
from tests.support.app_server import start_redis
from tests.support.deadlines import until

pytestmark = pytest.mark.anyio
CHAT = ("alice", "chat-1")
NEWEST = "streaming_piece_0"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


class Process:
    """One process: the tabs its bridge says show each chat, and what it sent its sockets."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.watching: dict[tuple[str, str], set[str]] = {}
        self.sent: list[tuple[set[str], dict[str, Any]]] = []
        self.frames = TextFrames(self, SharedConversationState, self.tabs_watching)  # type: ignore[arg-type]

    def tabs_watching(self, key: tuple[str, str]) -> set[str]:
        return set(self.watching.get(key, ()))

    def values_sent_to(self, tab: str) -> list[str]:
        name = SharedConversationState.get_full_name()
        return [
            fields[f"{NEWEST}_rx_state_"]
            for tabs, delta in self.sent
            if tab in tabs
            for fields in [delta[name]]
        ]


@pytest.fixture
async def processes(redis_url, monkeypatch) -> AsyncIterator[tuple[Process, Process]]:
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(2)]
    one, other = Process(clients[0]), Process(clients[1])

    async def send_here(app: Process, update: Any, tabs: set[str]) -> None:
        if tabs:
            app.sent.append((tabs, update.delta))

    monkeypatch.setattr(text_frames, "send_here", send_here)
    monkeypatch.setattr(text_frames, "redis_of", lambda app: app.client)
    tasks = [asyncio.create_task(p.frames.follow()) for p in (one, other)]
    try:
        await until(lambda: one.frames.subscribed.is_set() and other.frames.subscribed.is_set())
        yield one, other
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for client in clients:
            await client.aclose()


async def test_a_frame_reaches_the_tabs_of_both_processes_once_each(processes) -> None:
    one, other = processes
    one.watching[CHAT] = {"tab-a1"}
    other.watching[CHAT] = {"tab-b1", "tab-b2"}
    await one.frames.send(CHAT, {NEWEST: "Hello"})
    await until(lambda: other.values_sent_to("tab-b2") == ["Hello"])
    assert one.values_sent_to("tab-a1") == ["Hello"]  # sent here, not again when heard back
    assert other.values_sent_to("tab-b1") == ["Hello"]
    await asyncio.sleep(0.05)  # nothing else arrives
    assert len(one.sent) == 1 and len(other.sent) == 1


async def test_a_chats_frames_arrive_in_the_order_sent(processes) -> None:
    one, other = processes
    other.watching[CHAT] = {"tab-b1"}
    texts = [f"word {n}" for n in range(50)]
    for text in texts:
        await one.frames.send(CHAT, {NEWEST: text})
    await until(lambda: len(other.values_sent_to("tab-b1")) == len(texts))
    assert other.values_sent_to("tab-b1") == texts


async def test_a_tab_that_left_the_chat_on_its_process_gets_nothing_more_of_it(
    processes,
) -> None:
    one, other = processes
    other.watching[CHAT] = {"tab-b1", "tab-b2"}
    await one.frames.send(CHAT, {NEWEST: "before"})
    await until(lambda: other.values_sent_to("tab-b1") == ["before"])
    other.watching[CHAT] = {"tab-b2"}  # tab-b1 opened another chat (on its own process)
    await one.frames.send(CHAT, {NEWEST: "after"})
    await until(lambda: other.values_sent_to("tab-b2") == ["before", "after"])
    assert other.values_sent_to("tab-b1") == ["before"]


async def test_frames_of_another_chat_reach_no_tab_of_this_one(processes) -> None:
    one, other = processes
    other.watching[CHAT] = {"tab-b1"}
    other.watching[("alice", "chat-2")] = {"tab-b2"}
    await one.frames.send(("alice", "chat-2"), {NEWEST: "elsewhere"})
    await until(lambda: other.values_sent_to("tab-b2") == ["elsewhere"])
    assert other.values_sent_to("tab-b1") == []


async def test_without_redis_frames_reach_this_processs_tabs_and_nothing_listens(
    monkeypatch,
) -> None:
    sent: list[set[str]] = []

    async def send_here(app: Any, update: Any, tabs: set[str]) -> None:
        sent.append(tabs)

    monkeypatch.setattr(text_frames, "send_here", send_here)
    monkeypatch.setattr(text_frames, "redis_of", lambda app: None)
    alone = TextFrames(object(), SharedConversationState, lambda key: {"tab-1"})  # type: ignore[arg-type]
    await alone.send(CHAT, {NEWEST: "Hi"})
    assert sent == [{"tab-1"}]
    await asyncio.wait_for(alone.follow(), timeout=5)  # returns at once: one process


async def test_a_message_not_of_this_app_on_the_channel_is_skipped_and_frames_go_on(
    processes, redis_url
) -> None:
    one, other = processes
    other.watching[CHAT] = {"tab-b1"}
    client = aioredis.Redis.from_url(redis_url)
    try:
        for stray in ("not json", '{"from": "x"}', "[1, 2]"):
            await client.publish(text_frames.CHANNEL, stray)
    finally:
        await client.aclose()
    await one.frames.send(CHAT, {NEWEST: "still here"})
    await until(lambda: other.values_sent_to("tab-b1") == ["still here"])


async def test_with_redis_gone_this_processs_tabs_still_get_the_frames(monkeypatch) -> None:
    sent: list[set[str]] = []

    async def send_here(app: Any, update: Any, tabs: set[str]) -> None:
        sent.append(tabs)

    class Gone:
        async def publish(self, channel: str, message: str) -> int:
            raise ConnectionError("Redis went away")

    monkeypatch.setattr(text_frames, "send_here", send_here)
    monkeypatch.setattr(text_frames, "redis_of", lambda app: Gone())
    frames = TextFrames(object(), SharedConversationState, lambda key: {"tab-1"})  # type: ignore[arg-type]
    for text in ("one", "two"):
        await frames.send(CHAT, {NEWEST: text})
    assert sent == [{"tab-1"}, {"tab-1"}]
    assert frames.published is False
