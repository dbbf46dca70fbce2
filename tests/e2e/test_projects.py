"""User story: projects. A person creates a project, gives it instructions, moves a chat into
it by the chat's menu, starts a new chat inside it, sees all of it live in a second tab, and
deletes it choosing what becomes of its chats (deleted with them: one undo brings all back).
Another person's project made by the ``chats`` CLI appears in her open tab; she drags a chat
onto it and adds a file to it from its panel (an image is refused by the picker, saying
why)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.helpers import TINY_PNG, create_chat, main_list_item, open_tab
from tests.support.app_server import AppServer
from tests.support.deadlines import CHILD_START_S, MARGIN_S, WAIT_MS

USER = "prue"  # a person of her own: other stories' chats stay out of these lists
NAME = "Jardín 🌱 家庭菜園"
ROOT = Path(__file__).resolve().parents[2]
MENU_TRIES = 3


def chats_cli(server: AppServer, *args: str) -> None:
    """The ``chats`` command, run as another process on the app's data."""
    env = {**os.environ, "CHATS_DATA_DIR": str(server.data_dir)}
    if server.storage:
        env["CHATS_STORAGE"] = server.storage
    done = subprocess.run(
        [sys.executable, "-m", "backend.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=CHILD_START_S,
    )
    assert done.returncode == 0, done.stderr


def group(page: Page, name: str):
    return page.locator("#projects-section .project-group", has_text=name)


def project_item(page: Page, name: str, chat_id: str):
    return group(page, name).locator(f'.chat-item[data-chat-id="{chat_id}"]')


def create_project(page: Page, name: str) -> None:
    page.locator("#new-project").click()
    page.locator("#new-project-name").fill(name)
    page.locator("#create-project").click()
    expect(group(page, name)).to_be_visible(timeout=WAIT_MS)


def project_menu(page: Page, name: str, item: str) -> None:
    """Pick ``item`` from the project's menu. A live refresh that lands while the menu is
    open may render the group again and close it (the item detaches): open it again."""
    for _ in range(MENU_TRIES - 1):
        group(page, name).locator(".project-menu").first.click()
        try:
            page.locator(f".{item}").click(timeout=MARGIN_S * 1000)
            return
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")  # a menu still open (it never closed) closes
    group(page, name).locator(".project-menu").first.click()
    page.locator(f".{item}").click()


class TestProjects:
    def test_a_project_from_creation_to_deletion_live_in_two_tabs(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server, user=USER)
        tab_b = open_tab(browser, app_server, user=USER)
        create_project(tab_a, NAME)
        expect(group(tab_b, NAME)).to_be_visible(timeout=WAIT_MS)

        project_menu(tab_a, NAME, "edit-project")
        tab_a.locator(".project-instructions-field textarea").fill("Answer as a gardener.")
        tab_a.locator(".save-project").click()
        expect(tab_a.locator(".save-project")).to_have_count(0, timeout=WAIT_MS)

        # A loose chat moves in by its menu: it leaves the list for the project's group.
        chat_id = create_chat(tab_a)
        main_list_item(tab_a, chat_id).locator(".chat-menu").click()
        tab_a.locator(".move-chat").click()
        tab_a.locator("#move-chat-picker .move-to-project", has_text=NAME).click()
        expect(project_item(tab_a, NAME, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_a, chat_id)).to_have_count(0, timeout=WAIT_MS)
        expect(project_item(tab_b, NAME, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_b, chat_id)).to_have_count(0, timeout=WAIT_MS)
        expect(tab_a.locator("#chat-project")).to_have_text(NAME, timeout=WAIT_MS)

        # A new chat started inside the project belongs to it, and its header says so.
        project_menu(tab_a, NAME, "new-chat-in-project")
        tab_a.wait_for_url(lambda url: "/chat/" in url and chat_id not in url, timeout=WAIT_MS)
        inside = tab_a.url.rsplit("/", 1)[-1]
        expect(project_item(tab_b, NAME, inside)).to_be_visible(timeout=WAIT_MS)
        expect(tab_a.locator("#chat-project")).to_have_text(NAME, timeout=WAIT_MS)

        # Folding the group is this tab's own.
        group(tab_b, NAME).locator(".project-toggle").click()
        expect(project_item(tab_b, NAME, inside)).to_have_count(0, timeout=WAIT_MS)
        expect(project_item(tab_a, NAME, inside)).to_be_visible()
        group(tab_b, NAME).locator(".project-toggle").click()

        # Deleting asks what becomes of the chats: moved out, they are loose chats again.
        project_menu(tab_a, NAME, "delete-project")
        expect(tab_a.locator("#delete-project-choice")).to_be_visible(timeout=WAIT_MS)
        tab_a.locator("#delete-project-move-out").click()
        expect(group(tab_b, NAME)).to_have_count(0, timeout=WAIT_MS)
        expect(main_list_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_b, inside)).to_be_visible(timeout=WAIT_MS)

    def test_deleting_a_project_with_its_chats_removes_them_everywhere(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server, user=USER)
        tab_b = open_tab(browser, app_server, user=USER)
        taxes = f"Taxes 2026 {secrets.token_hex(3)}"  # a rerun must not find the first run's
        create_project(tab_a, taxes)
        shown = tab_a.url  # "/" went on to the latest chat, if there is one
        project_menu(tab_a, taxes, "new-chat-in-project")
        tab_a.wait_for_url(lambda url: "/chat/" in url and url != shown, timeout=WAIT_MS)
        inside = tab_a.url.rsplit("/", 1)[-1]
        expect(project_item(tab_b, taxes, inside)).to_be_visible(timeout=WAIT_MS)

        project_menu(tab_b, taxes, "delete-project")
        tab_b.locator("#delete-project-and-chats").click()
        expect(group(tab_a, taxes)).to_have_count(0, timeout=WAIT_MS)
        expect(tab_a.locator(f'.chat-item[data-chat-id="{inside}"]')).to_have_count(
            0, timeout=WAIT_MS
        )

        # One undo brings back the project and its chats, in every tab.
        tab_b.locator("#undo-delete-project").click()
        expect(project_item(tab_a, taxes, inside)).to_be_visible(timeout=WAIT_MS)
        expect(project_item(tab_b, taxes, inside)).to_be_visible(timeout=WAIT_MS)
        expect(tab_b.locator("#project-undo-bar")).to_have_count(0, timeout=WAIT_MS)

    def test_a_project_from_the_cli_takes_a_dragged_chat_gives_it_back_and_takes_a_file(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server, user="quinn")
        chat_id = create_chat(tab)
        expect(main_list_item(tab, chat_id)).to_be_visible(timeout=WAIT_MS)
        chats_cli(app_server, "projects", "create", "--user", "quinn", "Recipes 🍞")
        expect(group(tab, "Recipes 🍞")).to_be_visible(timeout=WAIT_MS)  # no reload

        # Dragged onto the project's group, the chat leaves the loose list for it.
        main_list_item(tab, chat_id).locator("a").drag_to(group(tab, "Recipes 🍞"))
        expect(project_item(tab, "Recipes 🍞", chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab, chat_id)).to_have_count(0, timeout=WAIT_MS)

        # Dragged back onto the loose chats, it leaves the project; a loose chat dropped
        # there stays where it is.
        project_item(tab, "Recipes 🍞", chat_id).locator("a").drag_to(tab.locator("#loose-chats"))
        expect(main_list_item(tab, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(project_item(tab, "Recipes 🍞", chat_id)).to_have_count(0, timeout=WAIT_MS)
        main_list_item(tab, chat_id).locator("a").drag_to(group(tab, "Recipes 🍞"))
        expect(project_item(tab, "Recipes 🍞", chat_id)).to_be_visible(timeout=WAIT_MS)

        # The project's panel takes documents as the composer does; an image is refused.
        project_menu(tab, "Recipes 🍞", "edit-project")
        picker = tab.locator("#project-file-upload input[type=file]")
        note = {"name": "rye.md", "mimeType": "text/markdown", "buffer": b"# Rye\nSoak overnight."}
        picker.set_input_files(files=[note])
        expect(group(tab, "Recipes 🍞").locator(".project-file")).to_contain_text(
            ["rye.md"], timeout=WAIT_MS
        )
        image = {"name": "loaf.png", "mimeType": "image/png", "buffer": TINY_PNG}
        picker.set_input_files(files=[image])
        expect(tab.get_by_text("loaf.png cannot be added")).to_be_visible(timeout=WAIT_MS)
        expect(group(tab, "Recipes 🍞").locator(".project-file")).to_have_count(1)
