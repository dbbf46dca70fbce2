"""Production mode, two workers, Redis: tabs served by different workers stay in sync, and a
tab's token bound on one worker is refused on the other."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from backend.chats import Chats
from backend.transcript import load_window
from chatsapp.states.chat_people import ChatPeopleTabState
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.share_dialog import ShareDialogTabState
from chatsapp.states.shared_conversation import SharedConversationState
from chatsapp.states.shared_with_me import SharedWithMeState
from tests.e2e.helpers import (
    NEW_TITLE,
    SECRETS,
    alice_on,
    alices_tab,
    assert_refused,
    chat_item,
    connect_with,
    create_chat,
    event,
    open_tab,
    stream_and_rename,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS, until_blocking
from tests.support.raw_client import HYDRATE, RawTab
from tests.support.streamed_text import StreamedText
from tests.support.two_workers import (
    app_on_two_workers,
    on_another_worker,
    raw_worker_of,
    worker_of,
)

CONVERSATION = SharedConversationState.get_full_name()


@pytest.fixture(scope="module")
def prod_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    with app_on_two_workers(tmp_path_factory.mktemp("prod")) as server:
        yield server


def test_a_chat_created_on_one_worker_appears_in_a_tab_served_by_the_other(
    prod_server: AppServer, browser: Browser
):
    first = open_tab(browser, prod_server)

    def another_tab() -> tuple[Page, str]:
        tab = open_tab(browser, prod_server)
        return tab, worker_of(tab)

    other = on_another_worker(another_tab, worker_of(first), lambda tab: tab.context.close())

    chat_id = create_chat(first)
    expect(chat_item(other, chat_id)).to_be_visible(timeout=WAIT_MS)


# ── two tabs on two workers sending into one chat at once ───────────


def conversation_values(update: dict[str, Any]) -> dict[str, Any]:
    """The conversation state's part of an update's delta (``{}`` when it has none)."""
    return (update.get("delta") or {}).get(CONVERSATION, {})


def conversation(update: dict[str, Any], name: str) -> Any:
    return conversation_values(update).get(f"{name}_rx_state_")


def raw_tab_on(server: AppServer, token: str, path: str) -> tuple[RawTab, str]:
    """A tab below the browser showing ``path``, and the worker process that serves it."""
    tab = RawTab(server.backend_url, session_token=token).connect()
    tab.send(HYDRATE, path=path)
    tab.send(event(SharedDirectoryState, "link"), path=path)
    tab.send(event(ChatTabState, "open_chat"), path=path)
    return tab, raw_worker_of(tab, path)


def streamed(tab: RawTab) -> list[tuple[str, str]]:
    """(reply id, text so far) of every frame that streamed text, in arrival order."""
    frames, current, text = [], "", StreamedText()
    for update in tab.received:
        current = conversation(update, "streaming_message_id") or current
        if text.apply(conversation_values(update)) and text.text:
            frames.append((current, text.text))
    return frames


def test_sends_from_two_workers_into_one_chat_run_one_after_the_other_live_in_both(
    prod_server: AppServer,
):
    token = prod_server.session_token("carol")
    accounts = prod_server.accounts()
    try:
        user = accounts.user_by_username("carol")
        assert user is not None
    finally:
        accounts.close()
    with Chats(prod_server.data_dir, user.id) as chats:
        chat_id = chats.create_chat("Two workers").id
    path = f"/chat/{chat_id}"
    tabs: list[RawTab] = []
    try:
        first, first_worker = raw_tab_on(prod_server, token, path)
        tabs.append(first)
        other = on_another_worker(
            lambda: raw_tab_on(prod_server, token, path), first_worker, RawTab.close
        )
        tabs.append(other)

        # Both tabs send at the same instant.
        prompts = {first: "Hello from the first worker", other: "Hello from the second worker"}
        start = threading.Barrier(2)

        def send(tab: RawTab) -> None:
            start.wait()
            tab.send(event(ChatTabState, "send"), {"text": prompts[tab]}, path=path)

        senders = [threading.Thread(target=send, args=(tab,)) for tab in (first, other)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()

        def both_replies_shown(update: dict[str, Any]) -> bool:
            entries = conversation(update, "entries") or []
            done = [e for e in entries if e["role"] == "assistant" and not e["status"]]
            return len(done) == 2 and conversation(update, "streaming") is not True

        for tab in (first, other):
            tab.wait_for(both_replies_shown)
    finally:
        for tab in tabs:
            tab.close()

    # The stored transcript: each message answered in turn, in the order they were sent.
    with Chats(prod_server.data_dir, user.id) as chats:
        entries = load_window(chats.get_chat(chat_id).session).entries
    assert [e.role for e in entries] == ["user", "assistant", "user", "assistant"]
    assert {entries[0].text, entries[2].text} == set(prompts.values())
    replies = {entries[1].id: entries[1].text, entries[3].id: entries[3].text}
    assert all(e.status == "" for e in entries)

    for tab in (first, other):
        frames = streamed(tab)
        # FIFO, one at a time: the first message's reply streamed, then the second's, never
        # alternating; every frame is a prefix of its own reply as stored (no mixed text).
        order = [reply for reply, _ in itertools.groupby(reply for reply, _ in frames)]
        assert order == [entries[1].id, entries[3].id]
        for reply, text in frames:
            assert replies[reply].startswith(text), (reply, text)
        # Live in this tab whichever worker wrote it: several growing frames per reply. The
        # two tabs are served by different workers, so one of them watched the other
        # worker's reply.
        for reply in replies:
            assert len({text for r, text in frames if r == reply}) >= 2
        # What the page shows at the end is the stored transcript.
        shown = [conversation(u, "entries") for u in tab.received if conversation(u, "entries")]
        assert [(e["id"], e["text"]) for e in shown[-1]] == [(e.id, e.text) for e in entries]


# ── a token is bound for every worker ──────────────────────────────


class TestABindingSeenByEveryWorker:
    def test_a_token_bound_on_one_worker_is_refused_on_the_other(self, prod_server: AppServer):
        alice = alice_on(prod_server)
        tab = alices_tab(prod_server, alice)
        alices_worker, stolen = raw_worker_of(tab), tab.client_token
        tab.close()
        thieves: list[RawTab] = []
        try:

            def thief() -> tuple[RawTab, str]:
                tab = connect_with(prod_server, stolen, prod_server.session_token("bob"))
                assert_refused(tab, stolen)
                return tab, raw_worker_of(tab)

            # Every thief is refused, on either worker; all are checked for secrets below.
            thieves.append(on_another_worker(thief, alices_worker, thieves.append))
            other = alices_tab(prod_server, alice)
            try:
                stream_and_rename(other, alice, NEW_TITLE + " 4")
            finally:
                other.close()
            for thief in thieves:
                thief.flush()
                assert not any(secret in thief.text() for secret in SECRETS)
        finally:
            for thief in thieves:
                thief.close()


# ── a removed member's socket on the other worker hears nothing more ─────────

SHARE_OWNER, SHARE_MEMBER = "mwowner", "mwmember"
SHARED_SECRET = "the vault code is 5512-okapi"
LATER_SECRET = "written after the removal: 8830-tapir"


def member_tab_on(server: AppServer, username: str, path: str) -> tuple[RawTab, str]:
    """A raw tab of ``username`` that opened the shared chat at ``path`` as the page does,
    and the worker process that serves it."""
    tab = RawTab(server.backend_url, session_token=server.session_token(username)).connect()
    tab.send(HYDRATE, path=path)
    for state in (SharedDirectoryState, SharedWithMeState):
        tab.send(event(state, "link"), path=path)
    tab.send(event(ChatTabState, "open_chat"), path=path)
    tab.send(event(ChatPeopleTabState, "load"), path=path)
    return tab, raw_worker_of(tab, path)


def stored_messages(server: AppServer, owner_id: str, chat_id: str) -> int:
    with Chats(server.data_dir, owner_id) as chats:
        return len(chats.get_chat(chat_id).session.get_history())


class TestARemovedMemberOnTheOtherWorker:
    def test_receives_nothing_more_of_the_chat_from_either_worker(self, prod_server: AppServer):
        for name in (SHARE_OWNER, SHARE_MEMBER):  # the accounts exist before they are named
            prod_server.session_token(name)
        owner_id = prod_server.user_id(SHARE_OWNER)
        with Chats(prod_server.data_dir, owner_id) as chats:
            chat_id = chats.create_chat("Okapi survey").id
            chats.get_chat(chat_id).session.append_message(
                {
                    "id": "okapi-m1",
                    "role": "user",
                    "parts": [{"type": "text", "text": SHARED_SECRET}],
                }
            )
        path = f"/chat/{chat_id}"
        owner, owners_worker = member_tab_on(prod_server, SHARE_OWNER, path)
        tabs = [owner]
        try:
            owner.send(
                event(ShareDialogTabState, "share"),
                {"form_data": {"username": SHARE_MEMBER, "role": "participant"}},
                path,
            )
            owner.settle()
            far = on_another_worker(
                lambda: member_tab_on(prod_server, SHARE_MEMBER, path), owners_worker, RawTab.close
            )
            tabs.append(far)
            assert "5512-okapi" in far.text()

            owner.send(event(ShareDialogTabState, "set_open"), {"value": True}, path)
            owner.settle()
            member_id = prod_server.user_id(SHARE_MEMBER)
            owner.send(event(ShareDialogTabState, "remove_member"), {"member_id": member_id}, path)
            owner.settle()
            lost = ChatTabState.get_full_name()
            far.wait_for(lambda u: "removed you" in str((u.get("delta") or {}).get(lost)))
            far.settle()
            heard = len(far.received)

            # The owner's worker writes and streams the chat; the far socket asks again.
            owner.send(event(ChatTabState, "send"), {"text": LATER_SECRET}, path)
            until_blocking(lambda: stored_messages(prod_server, owner_id, chat_id) >= 3)
            owner.settle()
            far.send(HYDRATE, path=path)
            far.send(event(ChatTabState, "send"), {"text": "still here?"}, path)
            far.send(event(ChatTabState, "open_chat"), path=path)
            far.settle()
            after = str(far.received[heard:])
            for secret in ("8830-tapir", "5512-okapi", "Okapi survey"):
                assert secret not in after, secret
            assert stored_messages(prod_server, owner_id, chat_id) == 3
        finally:
            for tab in tabs:
                tab.close()
