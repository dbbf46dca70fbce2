"""Accessibility (issues 15, 27): axe-core on every page, landmarks, screen readers.

The audit runs axe-core (pinned, installed from the npm registry into ``.tools/axe`` by
``scripts/test``) with every rule it runs by default (WCAG 2.0-2.2 A/AA and best practices:
landmarks, headings, names), on every page the app serves, in the light and the dark colour
scheme, at a desktop and a phone width, and fails on a violation of any impact, naming the
page, the scheme, the width, the rule and the elements. The pages are one list, ``VIEWS``: a
page added to the app is audited by adding it there.

The file runs its own fresh install, so the first page it audits is the setup form (shown only
before the first account exists). Then ``root`` is the admin; ``ada`` has the chats of the
ChatGPT fixture (imported once through Settings: a reply with a code block, a message with two
versions) and one agent; ``bo`` has no chat; ``cy``'s sessions are ended under an open page.
The keyboard stories are tests/e2e/test_keyboard.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from backend.accounts import CONSOLE_ACTOR
from chatsapp.auth.identity import SESSION_COOKIE
from tests.e2e.helpers import chat_id_titled, import_chatgpt
from tests.support.app_server import ROOT, AppServer, start_app
from tests.support.deadlines import WAIT_MS

AXE = ROOT / ".tools/axe/node_modules/axe-core/axe.min.js"
SCHEMES = ("light", "dark")
WIDTHS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
ADMIN, READER, NEWCOMER, LEAVER = "root", "ada", "bo", "cy"

_RUN_AXE = """async () => {
    const result = await axe.run(document);
    return result.violations.map((v) => ({
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


@dataclass
class Install:
    """The file's app, the people on it (one session each, reused by every tab) and ada's ids."""

    server: AppServer
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def token(self, person: str) -> str:
        if person not in self.tokens:
            self.tokens[person] = self.server.session_token(person, admin=person == ADMIN)
        return self.tokens[person]

    def context(self, browser: Browser, person: str | None, **options: Any) -> BrowserContext:
        """A browser context signed in as ``person`` (``None``: nobody), in ``options``."""
        # bypass_csp: axe is injected with add_script_tag(path=…), an inline <script>. The
        # app's policy allows inline scripts today; this keeps the audit independent of it.
        context = browser.new_context(bypass_csp=True, **options)
        if person is not None:
            cookie = {"name": SESSION_COOKIE, "value": self.token(person), "url": self.server.url}
            context.add_cookies([{**cookie, "httpOnly": True, "sameSite": "Strict"}])
        return context


@dataclass(frozen=True)
class View:
    """A page as a person sees it: where it is, who looks, what shows once it is ready, and
    what to do first (open a panel, search) to bring the view about."""

    name: str
    path: str  # may name one of the install's ids: "/chat/{plot}"
    person: str | None
    ready: str  # a selector shown once the page has loaded its data
    then: Callable[[Page, Install], None] | None = None
    shell: bool = True  # the signed-in layout (sidebar, chat list)


def show_sidebar(page: Page) -> None:
    """On a phone the sidebar is a drawer: open it with the visible menu button."""
    if not page.locator("#sidebar").is_visible():
        page.locator("button.drawer-button:visible").first.click()
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)


def _search_messages(page: Page, _install: Install) -> None:
    show_sidebar(page)
    page.locator("#title-search").fill("sine")
    expect(page.locator(".chat-item")).to_have_count(1, timeout=WAIT_MS)
    page.locator("#toggle-message-search").click()
    page.locator("#message-search").fill("matplotlib")
    expect(page.locator(".message-hit").first).to_be_visible(timeout=WAIT_MS)


def _open_memory(page: Page, _install: Install) -> None:
    page.locator("#toggle-memory").click()
    expect(page.locator("#memory-panel .memory-content").first).to_be_visible(timeout=WAIT_MS)


def _open_state(page: Page, _install: Install) -> None:
    page.locator("#state-toggle").click()
    expect(page.locator("#state-panel")).to_be_visible(timeout=WAIT_MS)


def _open_agent_editor(page: Page, _install: Install) -> None:
    page.locator(".agent-edit").first.click()
    expect(page.locator("#agent-history")).to_be_visible(timeout=WAIT_MS)


def _end_the_session(page: Page, install: Install) -> None:
    # Signed in as far as the page knows (its account loaded) before the session ends.
    expect(page.locator("#account-name")).to_have_text(LEAVER, timeout=WAIT_MS)
    accounts = install.server.accounts()
    try:
        accounts.sign_out(install.tokens.pop(LEAVER))  # the next tab signs in afresh
    finally:
        accounts.close()
    expect(page.locator("#signed-out-notice")).to_be_visible(timeout=WAIT_MS)


# Every page the app serves, and the panels that change a page most. Setup comes first: it
# is shown only before the first account exists.
VIEWS = [
    View("setup", "/setup", None, "#setup-form", shell=False),
    View("sign-in", "/sign-in", None, "#sign-in-form", shell=False),
    View("sign-up", "/sign-up", None, "#sign-up-form", shell=False),
    View("empty home", "/", NEWCOMER, "#empty-state"),
    View("chat", "/chat/{plot}", READER, ".message-assistant .code-block"),
    View("chat, message search", "/chat/{plot}", READER, ".branch-position", _search_messages),
    View("chat, memory panel", "/chat/{plot}", READER, ".branch-position", _open_memory),
    View("chat, session state", "/chat/{plot}", READER, ".branch-position", _open_state),
    View("missing chat", "/chat/no-such-chat", READER, "#missing-chat"),
    View("settings", "/settings", READER, "#import-section"),
    View("agents", "/agents", READER, ".agent-row", shell=False),
    View("agent editor", "/agents", READER, ".agent-row", _open_agent_editor, shell=False),
    View("account", "/account", READER, "#password-form", shell=False),
    View("admin", "/admin", ADMIN, f"#user-{READER}", shell=False),
    View("admin, refused", "/admin", READER, "#admin-refused", shell=False),
    View("admin models", "/admin/models", ADMIN, "#ep-save", shell=False),
    View("signed out", "/", LEAVER, "#empty-state", _end_the_session),
]


def view_named(name: str) -> View:
    return next(view for view in VIEWS if view.name == name)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    """A fresh install of this file's own, answered by the offline assistant (slowed, so a
    story can watch a reply while it streams)."""
    base = tmp_path_factory.mktemp("a11y")
    env = {"CHATS_OFFLINE_CHUNK_DELAY_S": "0.12"}
    server = start_app(base / "data", base / "app.log", env=env, mode="prod")
    yield Install(server)
    server.stop()


@pytest.fixture(scope="module")
def people(install: Install, browser: Browser) -> Install:
    """Everyone but the setup form's visitor: the admin first, sign-up open, ada's chats and
    agent."""
    install.token(ADMIN)
    accounts = install.server.accounts()
    try:
        accounts.set_signup_policy(CONSOLE_ACTOR, "open")
    finally:
        accounts.close()
    page = install.context(browser, READER, **WIDTHS["desktop"]).new_page()
    import_chatgpt(page, install.server)
    install.ids["plot"] = chat_id_titled(page, "Plotting sine waves")
    install.ids["short"] = chat_id_titled(page, "Short chat")
    page.goto(install.server.url + "/agents")
    page.locator("#agent-new").click()
    page.locator("#agent-name").fill("Proofreader")
    page.locator("#agent-instructions").fill("Point out typos; change nothing else.")
    page.locator("#agent-save").click()
    expect(page.locator(".agent-row")).to_have_count(1, timeout=WAIT_MS)
    page.context.close()
    return install


def open_view(browser: Browser, install: Install, view: View, width: str) -> Page:
    """``view`` loaded at ``width`` in the light scheme, brought about and ready."""
    context = install.context(browser, view.person, color_scheme="light", **WIDTHS[width])
    page = context.new_page()
    page.goto(install.server.url + view.path.format(**install.ids))
    expect(page.locator(view.ready).first).to_be_visible(timeout=WAIT_MS)
    if view.shell:
        expect(page.locator("#chat-list .rt-Skeleton")).to_have_count(0, timeout=WAIT_MS)
    if view.then is not None:
        view.then(page, install)
    return page


def violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations of every rule it runs by default, of any impact."""
    return page.evaluate(_RUN_AXE)


def audit(page: Page) -> dict[str, list[str]]:
    """axe in each colour scheme (switched in place: the app follows the system's), one line
    per violated rule; axe is injected once."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run scripts/test, which installs axe-core from npm")
    page.add_script_tag(path=str(AXE))
    found: dict[str, list[str]] = {}
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        expect(page.locator("html")).to_have_class(re.compile(rf"\b{scheme}\b"))
        found[scheme] = [
            f"{v['impact']} {v['id']} ({v['help']}): {len(v['targets'])} × "
            + ", ".join(v["targets"])
            for v in violations(page)
        ]
    return found


@pytest.mark.parametrize("view", VIEWS, ids=[view.name for view in VIEWS])
def test_every_page_has_no_axe_violation_in_either_scheme_at_either_width(
    view: View, install: Install, browser: Browser, request: pytest.FixtureRequest
):
    if view.path == "/setup":
        assert not install.tokens, "the setup form shows only before any account: keep it first"
    else:
        request.getfixturevalue("people")
    report = []
    for width in WIDTHS:
        page = open_view(browser, install, view, width)
        for scheme, lines in audit(page).items():
            report += [f"{width}, {scheme}: {line}" for line in lines]
        page.context.close()
    assert not report, f"{view.name}: {len(report)} violation(s)\n" + "\n".join(report)


class TestLandmarks:
    def test_the_sidebar_is_navigation_the_chat_is_main_and_memory_is_complementary(
        self, people: Install, browser: Browser
    ):
        page = open_view(browser, people, view_named("chat, memory panel"), "desktop")
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
        self, people: Install, browser: Browser
    ):
        page = open_view(browser, people, view_named("chat"), "desktop")
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
