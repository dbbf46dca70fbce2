"""The pages beside the chat on a phone (390×844, touch) and a tablet (820×1180).

Each page fits the screen's width (the page never scrolls sideways: a mobile browser would zoom
the whole page out to show what sticks out), its forms are as wide as the screen, a table's
rows stack into cards, and every main control is on screen without a sideways scroll. The
drawer closes whatever picks a chat from it: an archived chat, or a new chat with an agent from
the "New chat with ▾" menu. Each story signs in its own person, so no other story's data
interferes.
"""

from __future__ import annotations

import re
import uuid
from contextlib import closing
from typing import Any

from playwright.sync_api import Browser, Locator, Page, expect

from backend.accounts import CONSOLE_ACTOR
from tests.e2e.helpers import (
    PHONE,
    PHONE_WIDTH,
    TABLET,
    agent_row,
    archive,
    archived_item,
    create_agent,
    create_chat,
    expect_drawer_closed,
    open_archived,
    open_as,
    open_drawer,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

TABLET_WIDTH = TABLET["viewport"]["width"]
# "As wide as the screen": the page's side padding is all that is left.
FULL_WIDTH_PX = 0.8 * PHONE_WIDTH
# Names long enough to widen a table column or a row of buttons past a phone's width.
LONG_USERNAME = "maximiliana_vandersloot_2026"
LONG_URL = "http://127.0.0.1:9/v1/a-deliberately-long-path/that-does-not-fit/on-a-phone"
LONG_AGENT = "Travel planner for long weekends in the Douro valley"


def open_page(
    browser: Browser,
    server: AppServer,
    user: str,
    path: str,
    device: dict[str, Any],
    *,
    admin: bool = False,
) -> Page:
    if admin:
        server.session_token(user, admin=True)  # an admin from the start, whoever came first
    page = server.signed_in_context(browser, user, **device).new_page()
    page.goto(server.url + path)
    return page


def expect_no_sideways_scroll(page: Page, width: int = PHONE_WIDTH) -> None:
    """Nothing is wider than the screen (a mobile browser widens ``innerWidth`` to fit it)."""
    sizes = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, inner: innerWidth})"
    )
    assert sizes["scroll"] <= sizes["inner"] == width, sizes


def expect_on_screen(*controls: Locator, width: int = PHONE_WIDTH) -> None:
    """Visible, whole, and inside the screen's width without scrolling sideways."""
    for control in controls:
        expect(control).to_be_visible(timeout=WAIT_MS)
        box = control.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (str(control), box)
        control.scroll_into_view_if_needed()
        # Whole, give or take a fraction of a pixel (wrapped text can end at 844.2 of 844).
        expect(control).to_be_in_viewport(ratio=0.99)


def text_lines(element: Locator) -> int:
    """How many lines the visible text inside ``element`` takes."""
    return element.evaluate(
        """el => {
            const middles = [];
            const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            while (walker.nextNode()) {
                const range = document.createRange();
                range.selectNodeContents(walker.currentNode);
                for (const rect of range.getClientRects()) {
                    if (rect.width > 0) middles.push(rect.top + rect.height / 2);
                }
            }
            // Texts of different sizes on one line have middles a pixel or two apart.
            middles.sort((a, b) => a - b);
            return middles.filter((m, i) => i === 0 || m - middles[i - 1] > 6).length;
        }"""
    )


def expect_full_width(*fields: Locator) -> None:
    for field in fields:
        box = field.bounding_box()
        assert box is not None and box["width"] >= FULL_WIDTH_PX, (str(field), box)


class TestOtherPagesOnAPhone:
    def test_the_account_page_fits_a_phone(self, app_server: AppServer, browser: Browser):
        page = open_page(browser, app_server, "amelie", "/account", PHONE)
        expect(page.locator("#account-username")).to_contain_text("amelie", timeout=WAIT_MS)
        expect_on_screen(
            page.locator("#field-current"),
            page.locator("#field-new"),
            page.locator("#password-submit"),
            page.locator("#sign-out-elsewhere"),
            page.locator("#sign-out"),
        )
        expect_full_width(page.locator("#field-current"), page.locator("#field-new"))
        expect_no_sideways_scroll(page)

    def test_the_sign_in_and_sign_up_forms_fit_a_phone(
        self, app_server: AppServer, browser: Browser
    ):
        with closing(app_server.accounts()) as accounts:
            invite = accounts.create_invite(CONSOLE_ACTOR).token
            policy = accounts.signup_policy()
            accounts.set_signup_policy(CONSOLE_ACTOR, "invite")  # the form shows for an invite
        try:
            page = browser.new_context(**PHONE).new_page()  # nobody signed in
            for path, form in (("/sign-in", "sign-in"), (f"/sign-up?invite={invite}", "sign-up")):
                page.goto(app_server.url + path)
                expect(page.locator(f"#{form}-form")).to_be_visible(timeout=WAIT_MS)
                fields = page.locator("#field-username"), page.locator("#field-password")
                expect_on_screen(*fields, page.locator(f"#{form}-submit"))
                expect_full_width(*fields)
                expect_no_sideways_scroll(page)
        finally:
            with closing(app_server.accounts()) as accounts:
                accounts.set_signup_policy(CONSOLE_ACTOR, policy)

    def test_the_admin_page_stacks_its_people_and_forms_and_wraps_an_invite_link(
        self, app_server: AppServer, browser: Browser
    ):
        with closing(app_server.accounts()) as accounts:
            if accounts.user_by_username(LONG_USERNAME) is None:
                accounts.create_user(CONSOLE_ACTOR, LONG_USERNAME, "a long enough password")
        page = open_page(browser, app_server, "adelaide", "/admin", PHONE, admin=True)
        expect(page.locator(f"#user-{LONG_USERNAME}")).to_be_visible(timeout=WAIT_MS)
        page.locator("#new-invite").click()
        expect(page.locator("#invite-link")).to_contain_text("invite=", timeout=WAIT_MS)

        expect_no_sideways_scroll(page)
        expect_on_screen(
            page.locator(f"#user-{LONG_USERNAME}"),
            page.locator(f"#disable-{LONG_USERNAME}"),
            page.locator("#new-username"),
            page.locator("#new-password"),
            page.locator("#create-user"),
            page.locator("#signup-policy"),
            page.locator("#invite-link"),
        )
        expect_full_width(page.locator("#new-username"), page.locator("#new-password"))

    def test_the_model_endpoints_page_stacks_its_table_and_form(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_page(browser, app_server, "adelaide", "/admin/models", PHONE, admin=True)
        expect(page.locator("#ep-save")).to_be_visible(timeout=WAIT_MS)
        expect_full_width(*(page.locator(f"#ep-{f}") for f in ("name", "url", "key", "models")))
        page.locator("#ep-name").fill("phone-lab")
        page.locator("#ep-url").fill(LONG_URL)
        page.locator("#ep-models").fill("a-model-with-a-long-name, another-model-with-a-long-name")
        page.locator("#ep-save").click()
        row = page.locator('.endpoint-row[data-endpoint="phone-lab"]')
        expect(row).to_be_visible(timeout=WAIT_MS)
        try:
            expect_no_sideways_scroll(page)
            # Stacked: the row is a card as wide as the table, its remove button on screen.
            expect_on_screen(row, row.locator(".endpoint-delete"), page.locator("#ep-save"))
        finally:
            # Endpoints are the whole server's: take this one away again (from the phone).
            row.locator(".endpoint-delete").click()
            expect(row).to_have_count(0, timeout=WAIT_MS)

    def test_the_agent_library_and_editor_fit_a_phone(
        self, app_server: AppServer, browser: Browser
    ):
        # Someone new on each try: a rerun must not find the first try's agent.
        page = open_page(browser, app_server, f"agatha-{uuid.uuid4().hex[:6]}", "/agents", PHONE)
        expect(page.locator("#agent-new")).to_be_visible(timeout=WAIT_MS)
        create_agent(page, LONG_AGENT, "Plan walks and wine tastings.")
        row = agent_row(page, LONG_AGENT)
        row.locator(".agent-edit").click()
        expect(page.locator("#agent-history .agent-version")).to_have_count(1, timeout=WAIT_MS)

        expect_no_sideways_scroll(page)
        expect_full_width(
            page.locator("#agent-name"),
            page.locator("#agent-instructions"),
            page.locator("#agent-model"),
            page.locator("#agent-temperature"),
            page.locator("#agent-max-tokens"),
        )
        expect_on_screen(
            *(page.get_by_text(tool, exact=True) for tool in ("remember", "search_chats")),
            page.locator("#agent-save"),
            row.locator(".agent-name"),
            row.locator(".agent-new-chat"),
            row.locator(".agent-edit"),
            row.locator(".agent-set-default"),
        )

    def test_the_settings_page_fits_a_phone_and_keeps_its_drawer(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_page(browser, app_server, "sefa", "/settings", PHONE)
        expect(page.locator("#settings-page")).to_be_visible(timeout=WAIT_MS)
        expect_no_sideways_scroll(page)
        expect_on_screen(
            page.locator("button.drawer-button:visible"),
            page.locator("#auto-archive-days"),
            page.locator("#auto-archive-save"),
            page.get_by_role("button", name="Choose a file to import"),
            page.locator("#export-all"),
        )
        open_drawer(page)
        expect_on_screen(page.locator("#to-settings"), page.locator("#sign-out"))


class TestOtherPagesOnATablet:
    def test_each_page_fits_a_tablet_with_its_controls_on_screen(
        self, app_server: AppServer, browser: Browser
    ):
        app_server.session_token("tamsin", admin=True)
        context = app_server.signed_in_context(browser, "tamsin", **TABLET)
        page = context.new_page()
        pages = {
            "/account": ["#field-current", "#password-submit", "#sign-out"],
            "/admin": ["#disable-tamsin", "#new-username", "#create-user", "#new-invite"],
            "/admin/models": ["#ep-url", "#ep-models", "#ep-save"],
            "/agents": ["#agent-new"],
            "/settings": ["#auto-archive-save", "#export-all", "#new-chat", "#sign-out"],
        }
        for path, controls in pages.items():
            page.goto(app_server.url + path)
            expect(page.locator(controls[0])).to_be_visible(timeout=WAIT_MS)
            expect_no_sideways_scroll(page, TABLET_WIDTH)
            expect_on_screen(*(page.locator(c) for c in controls), width=TABLET_WIDTH)
        # The tablet's narrower sidebar keeps each button's label on one line, a name whole.
        for button in ("#new-chat", "#sign-out"):
            assert text_lines(page.locator(button)) == 1, button
        assert page.locator("#account-name").evaluate("el => el.scrollWidth <= el.clientWidth")


class TestDrawerPicksOnAPhone:
    def test_picking_an_archived_chat_in_the_drawer_opens_it_and_closes_the_drawer(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "archibald", PHONE)
        open_drawer(page)
        archived = create_chat(page)
        expect_drawer_closed(page)
        open_drawer(page)
        create_chat(page)
        expect_drawer_closed(page)

        open_drawer(page)
        archive(page, archived)
        open_archived(page)
        item = archived_item(page, archived)
        expect_on_screen(item.locator("a"), item.locator(".chat-menu"))
        item.locator("a").tap()
        expect(page).to_have_url(re.compile(f"/chat/{archived}$"), timeout=WAIT_MS)
        expect(page.locator("#open-chat-id")).to_have_text(archived, timeout=WAIT_MS)
        expect_drawer_closed(page)
        expect(page.locator("#archived-label")).to_be_visible(timeout=WAIT_MS)

    def test_a_new_chat_with_an_agent_from_the_drawer_menu_closes_the_drawer(
        self, app_server: AppServer, browser: Browser
    ):
        library = open_page(browser, app_server, "nadia", "/agents", PHONE)
        expect(library.locator("#agent-new")).to_be_visible(timeout=WAIT_MS)
        create_agent(library, LONG_AGENT, "Plan walks.")
        library.context.close()

        page = open_as(browser, app_server, "nadia", PHONE)
        open_drawer(page)
        page.locator("#new-chat-with").tap()
        # .first: a rerun of this story (scripts/test) finds the first run's agent of that name too
        choice = page.locator(".new-chat-agent", has_text=LONG_AGENT).first
        expect_on_screen(page.locator("#new-chat-agents"), choice)
        choice.tap()
        expect(page).to_have_url(re.compile(r"/chat/[^/]+$"), timeout=WAIT_MS)
        expect(page.locator("#agent-label")).to_contain_text(LONG_AGENT, timeout=WAIT_MS)
        expect_drawer_closed(page)
        expect(page.locator("#composer")).to_be_visible()
