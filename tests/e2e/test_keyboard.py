"""Keyboard use (issues 15, 27): every action reachable with Tab, and every stop visibly focused.

On the chat page, settings, the agents page with its editor open, the admin pages, the
account page, a missing chat, the empty home and the sign-in form, Tab from the top of the
page goes round every visible control once (no control skipped, no wrapper taking a stop of
its own) and each stop draws a focus ring; then stories do the main actions of the chat
page, settings, agents and admin with the keyboard alone. ``kay`` has the chats of the
ChatGPT fixture (imported once through Settings); ``kit`` is an admin; ``kim`` has no chat.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import chat_id_titled, chat_item, import_chatgpt
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

USER, ADMIN, NEWCOMER = "kay", "kit", "kim"  # kim has no chat
CONTROL_TAGS = ("a", "button", "input", "select", "textarea")
MAX_TABS = 200  # more Tab presses than any page has stops, so a trap or a gap fails

# The focused element (named by a mark it keeps), and whether a focus ring is drawn for it.
# Radix text fields draw the ring on their root (``:focus-within``), not on the field itself;
# Radix checkboxes draw it on the box, their ``::before``.
_FOCUSED = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    window.__marks = window.__marks || 0;
    if (!el.dataset.kbMark) el.dataset.kbMark = String(++window.__marks);
    const drawnBy = (style) => {
        const outline = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
        return outline || style.boxShadow !== "none";
    };
    const drawn = (node) => node !== null
        && (drawnBy(getComputedStyle(node)) || drawnBy(getComputedStyle(node, "::before")));
    const row = el.closest(".chat-item");
    return {
        mark: el.dataset.kbMark,
        id: el.id,
        tag: el.tagName.toLowerCase(),
        label: el.getAttribute("aria-label") || el.textContent.trim().slice(0, 40) || el.className,
        chatRow: row && el.tagName === "A" ? row.dataset.chatId : null,
        toast: el.matches("[data-sonner-toast]"),
        focusVisible: el.matches(":focus-visible"),
        ring: drawn(el) || drawn(el.closest(".rt-TextFieldRoot, .rt-TextAreaRoot")),
    };
}"""

# Every control a person can see and Tab to, each marked as _FOCUSED marks it.
_CONTROLS = """() => {
    window.__marks = window.__marks || 0;
    const selector = "a[href], button, input, select, textarea, [tabindex]";
    return [...document.querySelectorAll(selector)]
        .filter((el) => el.tabIndex >= 0 && !el.disabled)
        .filter((el) => el.checkVisibility({visibilityProperty: true}))
        .filter((el) => el.getBoundingClientRect().width > 1)
        .filter((el) => !el.closest('[aria-hidden="true"], [inert]'))
        .map((el) => {
            if (!el.dataset.kbMark) el.dataset.kbMark = String(++window.__marks);
            const label = el.getAttribute("aria-label") || el.textContent.trim().slice(0, 40);
            return {mark: el.dataset.kbMark, id: el.id, label: label || el.outerHTML.slice(0, 80)};
        });
}"""

_FROM_THE_TOP = """() => {
    // Focusing <body> moves the sequential focus starting point to the document's start.
    document.body.setAttribute("tabindex", "-1");
    document.body.focus();
    document.body.removeAttribute("tabindex");
}"""


@dataclass(frozen=True)
class KeyboardPage:
    name: str
    path: str  # "/chat/{plot}" names the imported chat
    person: str | None  # None: nobody signed in
    ready: str
    shell: bool = True
    open_editor: bool = False


PAGES = [
    KeyboardPage("chat", "/chat/{plot}", USER, ".message-assistant .code-block"),
    KeyboardPage("settings", "/settings", USER, "#import-section"),
    KeyboardPage("agents, editor open", "/agents", USER, "#agent-new", False, True),
    KeyboardPage("admin", "/admin", ADMIN, "#create-user", shell=False),
    KeyboardPage("admin models", "/admin/models", ADMIN, "#ep-save", shell=False),
    KeyboardPage("account", "/account", USER, "#password-form", shell=False),
    KeyboardPage("missing chat", "/chat/no-such-chat", USER, "#missing-chat"),
    KeyboardPage("empty home", "/", NEWCOMER, "#empty-state"),
    KeyboardPage("sign-in", "/sign-in", None, "#sign-in-form", shell=False),
]


@pytest.fixture(scope="module")
def plot_chat_id(app_server: AppServer, browser: Browser) -> Iterator[str]:
    """``kay``'s imported "Plotting sine waves" chat: a code block in its reply, two branches."""
    page = open_page(browser, app_server, USER, "/settings", "#import-section")
    import_chatgpt(page, app_server)
    chat_id = chat_id_titled(page, "Plotting sine waves")
    page.context.close()
    yield chat_id


def open_page(
    browser: Browser,
    server: AppServer,
    person: str | None,
    path: str,
    ready: str,
    shell: bool = True,
) -> Page:
    """``path`` for ``person`` (``None``: nobody signed in), once ``ready`` shows."""
    viewport = {"width": 1280, "height": 800}
    if person is None:
        context = browser.new_context(viewport=viewport)
    else:
        if person == ADMIN:
            server.session_token(ADMIN, admin=True)  # an admin from the first use on
        context = server.signed_in_context(browser, person, viewport=viewport)
    page = context.new_page()
    page.goto(server.url + path)
    expect(page.locator(ready).first).to_be_visible(timeout=WAIT_MS)
    if shell:
        expect(page.locator("#chat-list .rt-Skeleton")).to_have_count(0, timeout=WAIT_MS)
    return page


def tab_until(page: Page, wanted, limit: int = MAX_TABS) -> list[dict[str, Any]]:
    """Press Tab from the top of the page until ``wanted(focused, stops so far)``; every stop."""
    page.evaluate(_FROM_THE_TOP)
    stops: list[dict[str, Any]] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED)
        if focused is None:
            continue
        if wanted(focused, stops):
            return stops
        stops.append(focused)
    raise AssertionError(f"not reached in {limit} Tab presses; stops: {stops}")


def tab_round(page: Page) -> list[dict[str, Any]]:
    """Every stop of one round of Tab from the top, until focus comes back to the first."""
    return tab_until(page, lambda focused, stops: stops and focused["mark"] == stops[0]["mark"])


@pytest.mark.parametrize("where", PAGES, ids=[p.name for p in PAGES])
def test_tab_goes_round_every_control_once_and_every_stop_shows_a_focus_ring(
    where: KeyboardPage, app_server: AppServer, browser: Browser, plot_chat_id: str
):
    page = open_page(
        browser,
        app_server,
        where.person,
        where.path.format(plot=plot_chat_id),
        where.ready,
        where.shell,
    )
    if where.open_editor:
        page.locator("#agent-new").click()
        expect(page.locator("#agent-form")).to_be_visible(timeout=WAIT_MS)
    controls = page.evaluate(_CONTROLS)
    stops = tab_round(page)
    marks = [stop["mark"] for stop in stops]
    skipped = [c for c in controls if c["mark"] not in marks]
    assert skipped == [], f"{where.name}: Tab never reaches {skipped}"
    twice = [stop for stop in stops if marks.count(stop["mark"]) > 1]
    assert twice == [], f"{where.name}: Tab stops twice on {twice}"
    # One stop per control: no wrapper (a drop zone, a card) takes focus of its own. A toast
    # does (the toast library's choice: a keyboard can reach it to read or close it).
    wrappers = [stop for stop in stops if stop["tag"] not in CONTROL_TAGS and not stop["toast"]]
    assert wrappers == [], f"{where.name}: Tab stops on elements that are no control: {wrappers}"
    unringed = [stop for stop in stops if not (stop["focusVisible"] and stop["ring"])]
    assert unringed == [], f"{where.name}: focused by keyboard, no visible ring: {unringed}"


class TestChatPage:
    def test_enter_on_a_focused_chat_row_opens_that_chat(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_page(browser, app_server, USER, f"/chat/{plot_chat_id}", ".message-assistant")
        other = chat_id_titled(page, "Short chat")
        tab_until(page, lambda focused, _stops: focused["chatRow"] == other)
        page.keyboard.press("Enter")
        expect(page.locator("#open-chat-id")).to_have_text(other, timeout=WAIT_MS)
        expect(chat_item(page, other)).to_be_visible()

    def test_enter_on_the_attach_button_opens_the_file_picker(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_page(browser, app_server, USER, "/", "#sidebar")
        # A listener from the start: Playwright turns on file-chooser interception
        # asynchronously, and a picker opened before it is on is never reported.
        page.on("filechooser", lambda _chooser: None)
        page.goto(f"{app_server.url}/chat/{plot_chat_id}")
        expect(page.locator("#open-chat-id")).to_have_text(plot_chat_id, timeout=WAIT_MS)
        # The drop zone's own file input is hidden: the button is the one "Attach files".
        attach = page.get_by_role("button", name="Attach files")
        expect(attach).to_have_count(1)
        attach.focus()
        expect(attach).to_be_focused()
        with page.expect_file_chooser(timeout=WAIT_MS) as chooser:
            page.keyboard.press("Enter")
        assert chooser.value.is_multiple()


class TestOtherPages:
    def test_on_settings_enter_on_the_import_button_opens_the_file_picker(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_page(browser, app_server, USER, "/", "#sidebar")
        page.on("filechooser", lambda _chooser: None)
        page.goto(app_server.url + "/settings")
        expect(page.locator("#import-section")).to_be_visible(timeout=WAIT_MS)
        tab_until(page, lambda focused, _stops: focused["label"] == "Choose a file to import")
        with page.expect_file_chooser(timeout=WAIT_MS) as chooser:
            page.keyboard.press("Enter")
        assert not chooser.value.is_multiple()

    def test_an_agent_is_created_with_the_keyboard_alone(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_page(browser, app_server, USER, "/agents", "#agent-new", shell=False)
        tab_until(page, lambda focused, _stops: focused["id"] == "agent-new")
        page.keyboard.press("Enter")
        expect(page.locator("#agent-name")).to_be_visible(timeout=WAIT_MS)
        tab_until(page, lambda focused, _stops: focused["id"] == "agent-name")
        page.keyboard.type("Keyboard only")
        page.keyboard.press("Tab")  # the instructions
        page.keyboard.type("Answer briefly.")
        tab_until(page, lambda focused, _stops: focused["id"] == "agent-save")
        page.keyboard.press("Enter")
        expect(page.locator(".agent-row", has_text="Keyboard only")).to_be_visible(timeout=WAIT_MS)

    def test_an_admin_creates_an_admin_with_the_keyboard_alone(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_page(browser, app_server, ADMIN, "/admin", "#create-user", shell=False)
        tab_until(page, lambda focused, _stops: focused["id"] == "new-username")
        page.keyboard.type("keyed")
        page.keyboard.press("Tab")
        page.keyboard.type("a long enough password 1")
        page.keyboard.press("Tab")  # the role: a select, opened and chosen with keys
        role = page.get_by_role("combobox", name="Role")
        expect(role).to_be_focused()
        page.keyboard.press("Enter")
        # The list takes the focus on its chosen option once it has opened; a key pressed
        # before that (a busy machine delays it) is lost, so each step waits for the focus.
        expect(page.get_by_role("option", name="user")).to_be_focused(timeout=WAIT_MS)
        page.keyboard.press("ArrowDown")
        expect(page.get_by_role("option", name="admin")).to_be_focused(timeout=WAIT_MS)
        page.keyboard.press("Enter")
        expect(role).to_have_text("admin")
        # The closing list hands the focus back to the select a moment later: a Tab pressed
        # before that starts from the list, not from the select.
        expect(role).to_be_focused(timeout=WAIT_MS)
        page.keyboard.press("Tab")
        expect(page.locator("#create-user")).to_be_focused()
        page.keyboard.press("Enter")
        row = page.locator("#user-keyed")
        expect(row).to_be_visible(timeout=WAIT_MS)
        expect(row.locator('[data-label="Role"]')).to_have_text("admin")
