"""Steps browser stories share: opening a tab, creating and finding chats, sending and
waiting for a reply, the archive, agents, the phone drawer, imports, and the raw-socket
steps of the stolen-token stories.

Test modules import them from here, never from one another: a story file holds stories.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Browser, Page, expect

from backend.chats import Chats
from chatsapp.auth.token_binding import REFUSAL
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.shared_conversation import SharedConversationState
from tests.portability.conftest import FIXTURES
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS, WAIT_S
from tests.support.raw_client import HYDRATE, RawTab

# The archive


def main_list_item(page: Page, chat_id: str):
    return page.locator(f'#chat-list .chat-item[data-chat-id="{chat_id}"]')


def archived_item(page: Page, chat_id: str):
    return page.locator(f'#archived-list .chat-item[data-chat-id="{chat_id}"]')


def archive(page: Page, chat_id: str) -> None:
    main_list_item(page, chat_id).locator(".chat-menu").click()
    page.locator(".archive-chat").click()
    # The row leaves the list and its menu closes (a menu still closing would be a second
    # "Archive" item for the next call to find).
    expect(main_list_item(page, chat_id)).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator(".archive-chat")).to_have_count(0, timeout=WAIT_MS)


def open_archived(page: Page) -> None:
    page.locator("#toggle-archived").click()
    expect(page.locator("#archived-filter")).to_be_visible(timeout=WAIT_MS)


# Sending and replies


def send(page: Page, text: str) -> None:
    page.locator("#composer").fill(text)
    page.locator("#composer").press("Enter")


def wait_for_reply_end(page: Page) -> None:
    """Wait until the reply to what was just sent has ended.

    First a reply is seen (the one streaming, or the one stored): right after a send nothing
    streams *yet*, and "nothing streaming" alone would pass before the reply began.
    """
    expect(page.locator(".message-assistant").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator(".pending-reply")).to_have_count(0, timeout=WAIT_MS)


def wait_for_streamed_chars(page: Page, count: int) -> None:
    """Wait until the reply being written shows at least ``count`` characters."""
    page.wait_for_function(
        "n => (document.getElementById('streaming-reply')?.innerText ?? '').length >= n",
        arg=count,
        timeout=WAIT_MS,
    )


def reply(page: Page):
    """The (only) assistant reply of a one-turn chat, as this tab shows it."""
    return page.locator(".message-assistant").first


def reply_text(page: Page) -> str:
    return reply(page).locator(".message-text").inner_text()


def chat_with_one_reply(
    browser: Browser, server: AppServer, question: str, user: str = "alice"
) -> tuple[Page, str]:
    tab = open_tab(browser, server, user=user)
    chat_id = create_chat(tab)
    send(tab, question)
    wait_for_reply_end(tab)
    return tab, chat_id


def open_chat_tab(browser: Browser, server: AppServer, chat_id: str, user: str = "alice") -> Page:
    tab = open_tab(browser, server, f"/chat/{chat_id}", user)
    expect(tab.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)
    return tab


# A 1x1 transparent PNG.
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


# Alice's chat, seen from raw sockets (the stolen-token stories)

VICTIM = "alicia"  # alice's part, under a name no other browser test uses
SECRET_TITLE = "Okavango heron survey"
SECRET_TEXT = "the heron count is 4412-okapi"
NEW_TITLE = "Okavango census renamed"
SECRETS = ("Okavango", "4412-okapi")


@dataclass(frozen=True)
class Alice:
    user_id: str
    chat_id: str

    @property
    def path(self) -> str:
        return f"/chat/{self.chat_id}"


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


def streaming(update: dict[str, Any]) -> Any:
    values = (update.get("delta") or {}).get(SharedConversationState.get_full_name(), {})
    return values.get("streaming_rx_state_")


def alice_on(server: AppServer) -> Alice:
    server.session_token(VICTIM)
    user_id = server.user_id(VICTIM)
    with Chats(server.data_dir, user_id) as chats:
        return Alice(user_id, chats.create_chat(SECRET_TITLE).id)


def alices_tab(server: AppServer, alice: Alice, client_token: str = "") -> RawTab:
    """A tab of alice's on her chat, as the page opens it (hydrate, sidebar, chat)."""
    tab = RawTab(
        server.backend_url, session_token=server.session_token(VICTIM), client_token=client_token
    ).connect()
    tab.send(HYDRATE, path=alice.path)
    tab.send(event(SharedDirectoryState, "link"), path=alice.path)
    tab.send(event(ChatTabState, "open_chat"), path=alice.path)
    tab.settle()
    return tab


def stream_and_rename(tab: RawTab, alice: Alice, title: str) -> None:
    """Alice's chat streams a reply to its end, then she renames it: both fan out."""
    tab.send(event(ChatTabState, "send"), {"text": SECRET_TEXT}, alice.path)
    tab.wait_for(lambda u: streaming(u) is True)
    tab.wait_for(lambda u: streaming(u) is False)
    tab.send(event(SidebarTabState, "start_rename"), {"chat_id": alice.chat_id, "title": ""})
    tab.send(event(SidebarTabState, "set_edit_title"), {"value": title})
    tab.send(event(SidebarTabState, "commit_rename"))
    tab.wait_for(lambda u: title in str(u.get("delta")))


def connect_with(server: AppServer, client_token: str, session_token: str = "") -> RawTab:
    """A socket that connects with ``client_token`` and sends no event."""
    tab = RawTab(server.backend_url, session_token=session_token, client_token=client_token)
    return tab.connect()


def assert_refused(thief: RawTab, stolen: str) -> None:
    assert thief.refused.wait(WAIT_S), "the socket was not told its token was refused"
    assert thief.refusals == [REFUSAL]
    assert thief.new_tokens and stolen not in thief.new_tokens


# Tabs and the sidebar


def open_tab(browser: Browser, server: AppServer, path: str = "/", user: str = "alice") -> Page:
    """A new tab (its own browser context) signed in as ``user``, showing ``path``."""
    page = server.signed_in_context(
        browser, user, viewport={"width": 1280, "height": 800}
    ).new_page()
    page.goto(server.url + path)
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#chat-list .rt-Skeleton")).to_have_count(0, timeout=WAIT_MS)
    if path == "/":
        # ``/`` goes on to the latest chat, or shows "Start a conversation": wait for either,
        # so a click does not land on a page that is about to be replaced.
        page.wait_for_function(
            """() => location.pathname.startsWith('/chat/')
                || document.getElementById('empty-state')""",
            timeout=WAIT_MS,
        )
    return page


def create_chat(page: Page, button: str = "#new-chat") -> str:
    """Click "New chat" (or ``button``) and return the new chat's id once this tab shows it."""
    # The chats this tab knows: its rows, and the chat it shows (whose row may not have
    # arrived yet: sidebar refreshes are throttled to one per half second in a burst).
    known = page.evaluate(
        """() => [
            ...[...document.querySelectorAll('.chat-item')].map(e => e.dataset.chatId),
            (location.pathname.match(/\\/chat\\/([^/]+)$/) || [])[1],
        ]"""
    )
    page.locator(button).click()
    # Client-side navigation: wait for a chat URL that is not one we knew (a redirect to an
    # existing chat does not count).
    chat_id = page.wait_for_function(
        """known => {
            const match = location.pathname.match(/\\/chat\\/([^/]+)$/);
            return match && !known.includes(match[1]) ? match[1] : null;
        }""",
        arg=known,
        timeout=WAIT_MS,
    ).json_value()
    # Wait until the tab is linked to the new chat, so typing is not lost to a re-render.
    expect(page.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)
    return chat_id


def chat_item(page: Page, chat_id: str):
    return page.locator(f'.chat-item[data-chat-id="{chat_id}"]')


# Agents


def fill_agent_form(tab: Page, *, name: str, instructions: str, temperature: str = "") -> None:
    tab.locator("#agent-name").fill(name)
    tab.locator("#agent-instructions").fill(instructions)
    tab.locator("#agent-temperature").fill(temperature)


def agent_row(tab: Page, name: str):
    return tab.locator(".agent-row").filter(has=tab.locator(".agent-name", has_text=name))


def create_agent(tab: Page, name: str, instructions: str) -> None:
    tab.locator("#agent-new").click()
    fill_agent_form(tab, name=name, instructions=instructions)
    tab.locator("#agent-save").click()
    expect(agent_row(tab, name)).to_be_visible(timeout=WAIT_MS)


# Phones and tablets

PHONE_WIDTH, PHONE_HEIGHT = 390, 844
DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 800}}


PHONE: dict[str, Any] = {
    "viewport": {"width": PHONE_WIDTH, "height": PHONE_HEIGHT},
    "is_mobile": True,
    "has_touch": True,
}


TABLET: dict[str, Any] = {
    "viewport": {"width": 820, "height": 1180},
    "is_mobile": True,
    "has_touch": True,
}


def open_as(browser: Browser, server: AppServer, user: str, device: dict[str, Any]) -> Page:
    page = server.signed_in_context(browser, user, **device).new_page()
    page.goto(server.url)
    expect(page.locator("#main-pane")).to_be_visible(timeout=WAIT_MS)
    return page


def drawer_button(page: Page):
    """The menu button this page shows (the chat header's, or the empty state's)."""
    return page.locator("button.drawer-button:visible")


def open_drawer(page: Page) -> None:
    # On a page that has just loaded, assets/drawer.js may not listen yet: click again until
    # the drawer opens (a click it heard opens it; clicking again only when it did not).
    for _attempt in range(10):
        drawer_button(page).click()
        try:
            expect(page.locator("#sidebar")).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    expect(page.locator("#sidebar")).to_be_visible()
    expect(drawer_button(page)).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#main-pane")).to_have_attribute("inert", "")  # modal while open
    # Slid fully in (it animates from the left edge).
    page.wait_for_function("document.getElementById('sidebar').getBoundingClientRect().left >= 0")


def expect_drawer_closed(page: Page) -> None:
    expect(page.locator("#sidebar")).to_be_hidden(timeout=WAIT_MS)
    expect(drawer_button(page)).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#main-pane")).not_to_have_attribute("inert", "")


# Imports

CHATGPT = FIXTURES / "chatgpt_conversations.json"


def import_chatgpt(page: Page, server: AppServer) -> None:
    """Import the ChatGPT fixture through Settings; wait for its summary."""
    page.goto(server.url + "/settings")
    expect(page.locator("#import-section")).to_be_visible(timeout=WAIT_MS)
    page.locator("#import-upload input[type=file]").set_input_files(str(CHATGPT))
    expect(page.locator("#import-summary")).to_contain_text("chatgpt: 2 imported", timeout=WAIT_MS)


def chat_id_titled(page: Page, title: str) -> str:
    item = page.locator(".chat-item", has_text=title)
    expect(item).to_have_count(1, timeout=WAIT_MS)
    return str(item.get_attribute("data-chat-id"))


# Renaming


def rename(page: Page, chat_id: str, title: str) -> None:
    chat_item(page, chat_id).locator(".chat-menu").click()
    page.locator(".rename-chat").click()
    page.locator(".rename-input input").fill(title)
    page.locator(".rename-input input").press("Enter")
    expect(main_list_item(page, chat_id)).to_contain_text(title, timeout=WAIT_MS)


# The upload route's stories

ATTACH = f"{ChatTabState.get_full_name()}.handle_upload"
OWNERS_AGENT = "Ulla-Browser/7.7 (kestrel-4471)"  # what her tab's socket told the server


def open_and_close_tab(server: AppServer, session: str) -> str:
    """A tab of the owner's, linked to her sidebar as a page opens it, then closed."""
    tab = RawTab(
        server.backend_url, session_token=session, headers={"User-Agent": OWNERS_AGENT}
    ).connect()
    tab.send(HYDRATE)
    tab.send(f"{SharedDirectoryState.get_full_name()}.link")
    tab.settle()
    tab.close()
    return tab.client_token


# ── sharing ─────────────────────────────────────────────────────────


def open_share_dialog(owner: Page) -> None:
    owner.locator("#chat-header-menu").click()
    owner.locator("#open-share-dialog").click()
    expect(owner.locator("#share-dialog")).to_be_visible(timeout=WAIT_MS)


def add_member(owner: Page, username: str, role: str = "participant") -> None:
    """The owner adds ``username`` from the open share dialog."""
    dialog = owner.locator("#share-dialog")
    dialog.locator("#share-username").fill(username)
    if role != "participant":
        dialog.locator("form .rt-SelectTrigger").first.click()
        owner.get_by_role("option", name=role).click()
    dialog.locator("#share-add").click()
    expect(dialog.locator("#share-notice")).to_contain_text(
        f"Shared with {username} as {role}", timeout=WAIT_MS
    )
