"""Stories of a shared chat in a real browser: three people (owner, participant, viewer), each
in a browser context of their own, in one live chat (issue 28, docs/sharing.md "In the app").

Each story signs in people of its own, so their sidebars hold only its chats.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import (
    add_member,
    create_chat,
    open_share_dialog,
    open_tab,
    send,
    wait_for_streamed_chars,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.two_workers import app_on_two_workers, on_another_worker, worker_of

_story = itertools.count(1)


def people() -> tuple[str, str, str]:
    n = next(_story)
    return f"own{n}", f"par{n}", f"vie{n}"


def shared_row(page: Page, chat_id: str):
    return page.locator(f'#shared-with-me .shared-chat-row[data-chat-id="{chat_id}"]')


def open_shared(page: Page, chat_id: str) -> None:
    """The member opens the chat from "Shared with me" (it appeared there live)."""
    shared_row(page, chat_id).click()
    expect(page.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)


def transcript(page: Page):
    return page.locator("#transcript")


def share_with_two(
    browser: Browser, server: AppServer
) -> tuple[Page, Page, Page, str, tuple[str, str, str]]:
    """The owner's chat, shared with a participant and a viewer whose tabs were already open:
    it appears in their sidebars without a reload, and they open it."""
    names = people()
    owner_name, part_name, view_name = names
    owner = open_tab(browser, server, user=owner_name)
    part = open_tab(browser, server, user=part_name)
    viewer = open_tab(browser, server, user=view_name)
    chat_id = create_chat(owner)
    open_share_dialog(owner)
    add_member(owner, part_name)
    add_member(owner, view_name, "viewer")
    expect(owner.locator("#share-members .member-row")).to_have_count(3, timeout=WAIT_MS)
    owner.locator("#share-done").click()
    for member, role in ((part, "participant"), (viewer, "viewer")):
        expect(shared_row(member, chat_id)).to_contain_text(owner_name, timeout=WAIT_MS)
        expect(shared_row(member, chat_id)).to_contain_text(role)
        open_shared(member, chat_id)
    return owner, part, viewer, chat_id, names


class TestThreePeopleInOneChat:
    def test_sends_from_owner_and_participant_stream_into_all_three_tabs(
        self, app_server: AppServer, browser: Browser
    ):
        owner, part, viewer, _chat, (owner_name, part_name, _v) = share_with_two(
            browser, app_server
        )
        expect(viewer.locator("#composer")).to_have_count(0)
        expect(viewer.locator("#viewer-notice")).to_be_visible()

        send(part, "Hello from the participant")
        for tab in (owner, part, viewer):
            expect(transcript(tab)).to_contain_text("Hello from the participant", timeout=WAIT_MS)
            expect(tab.locator(".message-assistant")).to_have_count(1, timeout=WAIT_MS)
        expect(owner.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
        send(owner, "And one from the owner")
        for tab in (owner, part, viewer):
            expect(transcript(tab)).to_contain_text("And one from the owner", timeout=WAIT_MS)
            expect(tab.locator(".message-assistant")).to_have_count(2, timeout=WAIT_MS)
        # Every message names its author (a reply: who asked for it).
        authors = viewer.locator(".message-user .message-author")
        expect(authors).to_have_text([part_name, owner_name], timeout=WAIT_MS)

    def test_presence_and_typing_show_in_the_header(self, app_server: AppServer, browser: Browser):
        owner, part, viewer, _chat, (owner_name, part_name, view_name) = share_with_two(
            browser, app_server
        )
        for name in (owner_name, part_name, view_name):
            expect(owner.locator("#present-people")).to_contain_text(name, timeout=WAIT_MS)
        part.locator("#composer").press_sequentially("still thinking", delay=30)
        expect(owner.locator("#typing-people")).to_contain_text(
            f"{part_name} is typing", timeout=WAIT_MS
        )
        expect(viewer.locator("#typing-people")).to_contain_text(part_name, timeout=WAIT_MS)
        expect(owner.locator("#typing-people")).to_have_count(0, timeout=WAIT_MS)

        viewer.close()
        expect(owner.locator("#present-people")).not_to_contain_text(view_name, timeout=WAIT_MS)

    def test_a_participant_removed_mid_reply_loses_the_chat_at_once(
        self, app_server: AppServer, browser: Browser
    ):
        owner, part, viewer, chat_id, (_o, part_name, _v) = share_with_two(browser, app_server)
        send(owner, "Tell me a long story")
        wait_for_streamed_chars(part, 5)

        open_share_dialog(owner)
        owner.locator(f'.member-row[data-username="{part_name}"] .remove-member').click()
        expect(owner.locator("#share-members .member-row")).to_have_count(2, timeout=WAIT_MS)

        expect(part.locator("#lost-chat")).to_contain_text("removed you", timeout=WAIT_MS)
        expect(transcript(part)).to_have_count(0)
        expect(part.get_by_text("Tell me a long story")).to_have_count(0)
        expect(shared_row(part, chat_id)).to_have_count(0, timeout=WAIT_MS)
        # The others go on with the chat.
        expect(viewer.locator(".message-assistant")).to_have_count(1, timeout=WAIT_MS)

    def test_an_owners_delete_and_undo_reach_every_member(
        self, app_server: AppServer, browser: Browser
    ):
        owner, part, viewer, chat_id, _names = share_with_two(browser, app_server)
        owner.locator(f'.chat-item[data-chat-id="{chat_id}"] .chat-menu').click()
        owner.locator(".delete-chat").click()
        for member in (part, viewer):
            expect(shared_row(member, chat_id)).to_have_count(0, timeout=WAIT_MS)
            expect(transcript(member)).to_have_count(0, timeout=WAIT_MS)
        owner.locator("#undo-delete").click()
        for member in (part, viewer):
            expect(shared_row(member, chat_id)).to_be_visible(timeout=WAIT_MS)

    def test_a_name_that_is_no_account_gets_the_one_refusal(
        self, app_server: AppServer, browser: Browser
    ):
        owner_name, _p, _v = people()
        owner = open_tab(browser, app_server, user=owner_name)
        create_chat(owner)
        open_share_dialog(owner)
        owner.locator("#share-username").fill("nobody-by-this-name")
        owner.locator("#share-add").click()
        expect(owner.locator("#share-error")).to_have_text(
            "No enabled account has that username. Check the name with the person.",
            timeout=WAIT_MS,
        )


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Two app processes on Redis (``tests.support.two_workers``)."""
    base = tmp_path_factory.mktemp("shared-two")
    with app_on_two_workers(base, {"CHATS_OFFLINE_CHUNK_DELAY_S": "0.12"}) as server:
        yield server


class TestTwoProcesses:
    def test_a_share_a_reply_and_a_removal_reach_tabs_of_the_other_process(
        self, two_workers: AppServer, browser: Browser
    ):
        owner, part, viewer, chat_id, (_o, part_name, _v) = share_with_two(browser, two_workers)

        # One more tab of the participant, on the process that does not serve the owner.
        def participant_tab() -> tuple[Page, str]:
            tab = open_tab(browser, two_workers, f"/chat/{chat_id}", part_name)
            return tab, worker_of(tab)

        far = on_another_worker(participant_tab, worker_of(owner), lambda tab: tab.context.close())
        expect(far.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)

        send(owner, "Across processes")
        for tab in (owner, far, viewer):
            expect(tab.locator(".message-assistant")).to_have_count(1, timeout=WAIT_MS)
        expect(owner.locator("#present-people")).to_contain_text(part_name, timeout=WAIT_MS)
        far.locator("#composer").press_sequentially("typing far away", delay=30)
        expect(owner.locator("#typing-people")).to_contain_text(part_name, timeout=WAIT_MS)

        open_share_dialog(owner)
        owner.locator(f'.member-row[data-username="{part_name}"] .remove-member').click()
        for tab in (part, far):
            expect(tab.locator("#lost-chat")).to_be_visible(timeout=WAIT_MS)
            expect(shared_row(tab, chat_id)).to_have_count(0, timeout=WAIT_MS)
