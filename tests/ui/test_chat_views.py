"""A chat page's views leave the chat shown before, then link the next: no two tabs switching
between two chats the opposite way round can wait on each other for ever.

Run through Reflex's own event processor and in-memory state manager, with two shared states
standing for the chat views. Each tab's switch is held at a barrier until both tabs are inside
their switch, so both hold what they hold at the same moment, as two people clicking at once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import reflex as rx
from reflex_base.event.processor.base_state_processor import BaseStateEventProcessor

from chatsapp.auth.identity import solo_token
from chatsapp.chatsapp import app as chats_app
from chatsapp.reflex_seam import link_to, linked_token
from chatsapp.states.chat_views import CHAT_VIEWS, leave_other_chat

pytestmark = pytest.mark.anyio

BARRIER: dict[str, Any] = {}
SEEN: dict[str, str] = {}


class SharedViewProbeState(rx.SharedState):
    """Stands for the transcript (the first view a chat page links)."""

    @rx.event
    async def show(self, token: str) -> None:
        await link_to(self, token)
        await link_to(await self.get_state(SharedOtherViewProbeState), token)

    @rx.event
    async def leave(self, token: str, client: str) -> None:
        views = [self, await self.get_state(SharedOtherViewProbeState)]
        await leave_other_chat(views, token, solo_token(client))

    @rx.event
    async def switch(self, token: str) -> None:
        """Both views to ``token`` once every switching tab is in here."""
        BARRIER["inside"] += 1
        if BARRIER["inside"] == BARRIER["tabs"]:
            BARRIER["all_inside"].set()
        await BARRIER["all_inside"].wait()
        await link_to(self, token)
        await link_to(await self.get_state(SharedOtherViewProbeState), token)

    @rx.event
    async def tokens(self, client: str) -> None:
        other = await self.get_state(SharedOtherViewProbeState)
        SEEN[client] = f"{linked_token(self)} {linked_token(other)}"


class SharedOtherViewProbeState(rx.SharedState):
    """Stands for the header and the people (linked after the transcript)."""


VIEW = SharedViewProbeState.get_full_name()


@pytest.fixture
async def processor() -> AsyncIterator[BaseStateEventProcessor]:
    chats_app.state_manager  # noqa: B018  (created on first use)
    BARRIER.update(inside=0, tabs=2, all_inside=asyncio.Event())
    async with BaseStateEventProcessor().configure(state_manager=chats_app.state_manager) as p:
        yield p


async def enqueue(processor: BaseStateEventProcessor, tab: str, handler: str, **payload: Any):
    event = rx.event.Event(
        name=f"{VIEW}.{handler}", payload=payload, router_data={"token": tab, "headers": {}}
    )
    return await processor.enqueue(tab, event)


async def run(processor: BaseStateEventProcessor, tab: str, handler: str, **payload: Any) -> None:
    await (await enqueue(processor, tab, handler, **payload))


async def two_tabs_on(processor: BaseStateEventProcessor, first: str, second: str):
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    await run(processor, a, "show", token=first)
    await run(processor, b, "show", token=second)
    return a, b


async def test_switching_straight_to_the_other_chat_waits_for_ever(processor) -> None:
    """What the leave prevents (Reflex 0.10.1): each tab holds its chat and waits for the other."""
    a, b = await two_tabs_on(processor, "chat-one", "chat-two")
    switches = [
        await enqueue(processor, a, "switch", token="chat-two"),
        await enqueue(processor, b, "switch", token="chat-one"),
    ]
    done, _pending = await asyncio.wait(switches, timeout=1.0)
    for switch in switches:
        switch.cancel()  # (the seam's mend releases what they hold)
    assert not done, "Reflex no longer waits here: the leave may be no longer needed"


async def test_leaving_first_lets_both_switches_finish(processor) -> None:
    a, b = await two_tabs_on(processor, "chat-three", "chat-four")
    await run(processor, a, "leave", token="chat-four", client=a)
    await run(processor, b, "leave", token="chat-three", client=b)
    switches = [
        await enqueue(processor, a, "switch", token="chat-four"),
        await enqueue(processor, b, "switch", token="chat-three"),
    ]
    async with asyncio.timeout(30):  # a hang guard: they finish in milliseconds
        await asyncio.gather(*switches)
    await run(processor, a, "tokens", client=a)
    await run(processor, b, "tokens", client=b)
    assert {a: "chat-four chat-four", b: "chat-three chat-three"} == SEEN


async def test_a_view_already_on_the_chat_or_never_linked_stays(processor) -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    await run(processor, a, "show", token="chat-five")
    await run(processor, a, "leave", token="chat-five", client=a)  # a reload of the same chat
    await run(processor, b, "leave", token="chat-five", client=b)  # a tab's first chat page
    await run(processor, a, "tokens", client=a)
    await run(processor, b, "tokens", client=b)
    assert SEEN[a] == "chat-five chat-five"
    assert SEEN[b] == " "


async def test_a_view_on_another_chat_moves_to_the_tabs_own_token(processor) -> None:
    a = str(uuid.uuid4())
    await run(processor, a, "show", token="chat-six")
    await run(processor, a, "leave", token="chat-seven", client=a)
    await run(processor, a, "tokens", client=a)
    assert SEEN[a] == f"{solo_token(a)} {solo_token(a)}"


def test_the_chat_views_are_every_state_a_chat_page_links_to_the_chat() -> None:
    from chatsapp.states.chat_people import SharedChatPeopleState
    from chatsapp.states.models import SharedChatSettingsState
    from chatsapp.states.shared_conversation import SharedConversationState

    assert set(CHAT_VIEWS) == {
        SharedConversationState,
        SharedChatSettingsState,
        SharedChatPeopleState,
    }
