"""Accessibility (issue 15): an axe-core audit of every main view, keyboard use, screen readers.

The audit runs axe-core (pinned, installed from the npm registry into ``.tools/axe`` by
``scripts/test``) inside the page against the WCAG 2 A and AA rules, in the light and the dark
colour mode, and fails on any violation of impact *serious* or *critical*, naming the rule and
the elements. Every story signs in as ``ada``, whose chats come from the ChatGPT fixture
imported once through Settings (a reply with a code block, a message with two versions).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.app_server import ROOT, AppServer
from tests.e2e.test_live_sidebar import chat_item
from tests.e2e.test_portability_ui import chat_id_titled, import_chatgpt
from tests.support.deadlines import WAIT_MS

USER = "ada"
AXE = ROOT / ".tools/axe/node_modules/axe-core/axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa"]
BLOCKING_IMPACTS = ("serious", "critical")
THEMES = ("light", "dark")
CONTROL_TAGS = ("a", "button", "input", "select", "textarea")
MAX_TABS = 150  # more Tab presses than the chat page has stops, so a trap or a gap fails

_RUN_AXE = """async ({tags, impacts}) => {
    const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
    return result.violations
        .filter((v) => impacts.includes(v.impact))
        .map((v) => ({
            id: v.id,
            impact: v.impact,
            help: v.help,
            // Each element, with the measured colours when the rule is about contrast.
            targets: v.nodes.map((n) => {
                const data = (n.any[0] || {}).data || {};
                const colours = data.contrastRatio
                    ? ` [${data.fgColor} on ${data.bgColor}: ${data.contrastRatio}]`
                    : "";
                return n.target.join(" ") + colours;
            }),
        }));
}"""

# What the focused element is, and whether a focus ring is drawn for it. Radix text fields
# draw the ring on their root (``:focus-within``), not on the <input>/<textarea> itself.
_FOCUSED = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const drawn = (node) => {
        if (!node) return false;
        const style = getComputedStyle(node);
        const outline = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
        return outline || style.boxShadow !== "none";
    };
    const row = el.closest(".chat-item");
    return {
        id: el.id,
        tag: el.tagName.toLowerCase(),
        label: el.getAttribute("aria-label") || el.className || el.textContent.slice(0, 40),
        chatRow: row && el.tagName === "A" ? row.dataset.chatId : null,
        focusVisible: el.matches(":focus-visible"),
        ring: drawn(el) || drawn(el.closest(".rt-TextFieldRoot, .rt-TextAreaRoot")),
    };
}"""

_FROM_THE_TOP = """() => {
    // Focusing <body> moves the sequential focus starting point to the document's start.
    document.body.setAttribute("tabindex", "-1");
    document.body.focus();
    document.body.removeAttribute("tabindex");
}"""

_UNNAMED_BUTTONS = """() => [...document.querySelectorAll("button")]
    .filter((b) => b.textContent.trim() === "")
    .filter((b) => !(b.getAttribute("aria-label") || "").trim()
        && !(b.getAttribute("aria-labelledby") || "").trim())
    .map((b) => b.outerHTML.slice(0, 160))"""


# The live regions around the streaming reply once it shows text, and how many live regions
# it holds itself; the innermost region is kept to be read again when the reply is done.
_LIVE_REGIONS_OF_THE_REPLY = """() => {
    const reply = document.getElementById("streaming-reply");
    if (!reply) return null;
    const regions = [];
    for (let node = reply.parentElement; node; node = node.parentElement) {
        if (node.hasAttribute("aria-live")) regions.push(node);
    }
    window.__replyRegion = regions[0];
    return {
        regions: regions.map((r) => ({
            live: r.getAttribute("aria-live"),
            busy: r.getAttribute("aria-busy"),
        })),
        nested: reply.querySelectorAll("[aria-live]").length,
    };
}"""


def open_as(browser: Browser, server: AppServer, path: str, theme: str = "light") -> Page:
    """A tab signed in as ``USER`` in ``theme`` (the app follows the system colour scheme).

    ``bypass_csp``: axe is injected with ``add_script_tag(path=…)``, which inlines the file's
    text in a <script>. The app's policy allows inline scripts (Reflex hydrates through them),
    so this is not needed today; it keeps the audit independent of a future, stricter policy.
    """
    context = server.signed_in_context(
        browser,
        USER,
        viewport={"width": 1280, "height": 800},
        color_scheme=theme,
        bypass_csp=True,
    )
    page = context.new_page()
    page.goto(server.url + path)
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#chat-list .rt-Skeleton")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator("html")).to_have_class(re.compile(rf"\b{theme}\b"), timeout=WAIT_MS)
    return page


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's WCAG 2 A/AA violations of impact serious or critical on the page as shown."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run scripts/test, which installs axe-core from npm")
    page.add_script_tag(path=str(AXE))
    return page.evaluate(_RUN_AXE, {"tags": WCAG_TAGS, "impacts": list(BLOCKING_IMPACTS)})


def assert_no_serious_violations(page: Page, view: str) -> None:
    found = serious_violations(page)
    lines = [
        f"{v['impact']} {v['id']} ({v['help']}): {len(v['targets'])} × {', '.join(v['targets'])}"
        for v in found
    ]
    assert not found, f"{view}: {len(found)} serious/critical rule(s)\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def plot_chat_id(app_server: AppServer, browser: Browser) -> Iterator[str]:
    """The imported "Plotting sine waves" chat: a code block in its reply, two branches."""
    page = open_as(browser, app_server, "/settings")
    import_chatgpt(page, app_server)
    chat_id = chat_id_titled(page, "Plotting sine waves")
    page.context.close()
    yield chat_id


def open_chat(page: Page, server: AppServer, chat_id: str) -> None:
    page.goto(f"{server.url}/chat/{chat_id}")
    expect(page.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)
    expect(page.locator(".message-assistant").first).to_be_visible(timeout=WAIT_MS)


@pytest.mark.parametrize("theme", THEMES)
class TestAxeAudit:
    def test_the_chat_page_with_a_code_reply_has_no_serious_violations(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str, theme: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}", theme)
        open_chat(page, app_server, plot_chat_id)
        expect(page.locator(".message-assistant .code-block").first).to_be_visible()
        expect(page.locator(".branch-position").first).to_be_visible()
        assert_no_serious_violations(page, f"chat page ({theme})")

    def test_the_sidebar_with_message_search_results_has_no_serious_violations(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str, theme: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}", theme)
        page.locator("#title-search").fill("sine")
        expect(page.locator(".chat-item")).to_have_count(1, timeout=WAIT_MS)
        page.locator("#toggle-message-search").click()
        page.locator("#message-search").fill("matplotlib")
        expect(page.locator(".message-hit").first).to_be_visible(timeout=WAIT_MS)
        assert_no_serious_violations(page, f"sidebar with search ({theme})")

    def test_the_settings_page_after_an_import_has_no_serious_violations(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str, theme: str
    ):
        page = open_as(browser, app_server, "/settings", theme)
        expect(page.locator("#import-section")).to_be_visible()
        assert_no_serious_violations(page, f"settings ({theme})")

    def test_the_open_memory_panel_has_no_serious_violations(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str, theme: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}", theme)
        open_chat(page, app_server, plot_chat_id)
        page.locator("#toggle-memory").click()
        expect(page.locator("#memory-panel")).to_be_visible()
        expect(page.locator("#memory-panel .memory-content").first).to_be_visible(timeout=WAIT_MS)
        assert_no_serious_violations(page, f"memory panel ({theme})")


def tab_until(page: Page, wanted, limit: int = MAX_TABS) -> list[dict[str, Any]]:
    """Press Tab from the top of the page until ``wanted(focused)``; every stop, in order."""
    page.evaluate(_FROM_THE_TOP)
    stops: list[dict[str, Any]] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED)
        if focused is None:
            continue
        stops.append(focused)
        if wanted(focused):
            return stops
    raise AssertionError(f"not reached in {limit} Tab presses; stops: {stops}")


class TestKeyboard:
    def test_tab_from_the_top_reaches_every_main_control_and_every_stop_shows_a_focus_ring(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        open_chat(page, app_server, plot_chat_id)
        stops = tab_until(page, lambda focused: focused["id"] == "send")
        by_id = {stop["id"]: stop for stop in stops if stop["id"]}
        rows = [stop for stop in stops if stop["chatRow"]]
        for control in ("new-chat", "title-search", "composer", "send"):
            assert control in by_id, f"Tab never reached #{control}: {stops}"
        assert rows, f"Tab never reached a chat row: {stops}"
        # One stop per control: no wrapper (a drop zone, a card) takes focus of its own.
        wrappers = [stop for stop in stops if stop["tag"] not in CONTROL_TAGS]
        assert wrappers == [], f"Tab stops on elements that are no control: {wrappers}"
        unringed = [stop for stop in stops if not (stop["focusVisible"] and stop["ring"])]
        assert unringed == [], f"focused by keyboard with no visible focus ring: {unringed}"

    def test_enter_on_a_focused_chat_row_opens_that_chat(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        open_chat(page, app_server, plot_chat_id)
        other = chat_id_titled(page, "Short chat")
        tab_until(page, lambda focused: focused["chatRow"] == other)
        page.keyboard.press("Enter")
        expect(page.locator("#open-chat-id")).to_have_text(other, timeout=WAIT_MS)
        expect(chat_item(page, other)).to_be_visible()

    def test_enter_on_the_attach_button_opens_the_file_picker(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        # A listener from the start: Playwright turns on file-chooser interception
        # asynchronously, and a picker opened before it is on is never reported.
        page.on("filechooser", lambda _chooser: None)
        open_chat(page, app_server, plot_chat_id)
        attach = page.get_by_role("button", name="Attach files")
        attach.focus()
        expect(attach).to_be_focused()
        with page.expect_file_chooser(timeout=WAIT_MS) as chooser:
            page.keyboard.press("Enter")
        assert chooser.value.is_multiple()

    def test_every_button_without_text_has_an_accessible_name(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        open_chat(page, app_server, plot_chat_id)
        page.locator("#toggle-memory").click()
        expect(page.locator("#memory-panel")).to_be_visible()
        assert page.evaluate(_UNNAMED_BUTTONS) == []
        # The drop zone's own file input is hidden: the button is the one "Attach files".
        expect(page.get_by_role("button", name="Attach files")).to_have_count(1)
        page.locator("#state-toggle").click()
        expect(page.locator("#state-panel")).to_be_visible(timeout=WAIT_MS)
        assert page.evaluate(_UNNAMED_BUTTONS) == []


class TestLandmarks:
    def test_the_sidebar_is_navigation_the_chat_is_main_and_memory_is_complementary(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        open_chat(page, app_server, plot_chat_id)
        page.locator("#toggle-memory").click()
        nav = page.get_by_role("navigation", name="Chats")
        expect(nav.locator("#new-chat")).to_be_visible()
        expect(nav.locator("#title-search")).to_be_visible()
        main = page.get_by_role("main")
        expect(main.locator("#transcript")).to_be_visible()
        expect(main.locator("#composer")).to_be_visible()
        memory = page.get_by_role("complementary", name="Shared memory")
        expect(memory.locator("#memory-append")).to_be_visible()


class TestScreenReaderAnnouncements:
    def test_a_streamed_reply_is_announced_once_by_one_polite_live_region(
        self, app_server: AppServer, browser: Browser, plot_chat_id: str
    ):
        page = open_as(browser, app_server, f"/chat/{plot_chat_id}")
        open_chat(page, app_server, plot_chat_id)
        page.locator("#composer").fill("Hello there")
        page.locator("#send").click()
        # Read in one go, in the page: the reply may finish soon after its first tokens show.
        seen = page.wait_for_function(_LIVE_REGIONS_OF_THE_REPLY, timeout=WAIT_MS).json_value()
        # One region holds the reply (no live region nested per bubble or per token), and it
        # is busy while tokens arrive, so a screen reader reads the reply once it is complete.
        assert seen["regions"] == [{"live": "polite", "busy": "true"}], seen
        assert seen["nested"] == 0, seen
        expect(page.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
        page.wait_for_function(
            "() => document.contains(window.__replyRegion)"
            " && window.__replyRegion.getAttribute('aria-busy') === 'false'"
        )
