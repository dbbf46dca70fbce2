"""User stories of issue 13 in the browser: import, export, fork.

Each story signs in as its own person, so the chats one story imports never show in another's
sidebar or export.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import chat_id_titled, chat_item, import_chatgpt, open_tab
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS


def open_chat(page: Page, server: AppServer, chat_id: str) -> None:
    page.goto(f"{server.url}/chat/{chat_id}")
    expect(page.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)


class TestImport:
    def test_a_chatgpt_export_imports_with_a_summary_and_its_chats_appear_in_the_sidebar(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server, "/settings", user="ivy")
        import_chatgpt(tab, app_server)
        expect(tab.locator("#import-summary")).to_contain_text("1 failed")
        expect(tab.locator("#import-refused")).to_contain_text("Broken one")

        # The sidebar of the Settings page itself shows the new chats, live.
        chat_id = chat_id_titled(tab, "Short chat")
        chat_item(tab, chat_id).click()
        expect(tab.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)
        expect(tab.locator(".message-user")).to_contain_text("Hello there")
        expect(tab.locator(".message-assistant")).to_contain_text("Hi! How can I help?")

    def test_a_file_that_is_no_export_is_refused_with_a_reason(
        self, app_server: AppServer, browser: Browser, tmp_path: Path
    ):
        tab = open_tab(browser, app_server, "/settings", user="ines")
        stray = tmp_path / "notes.json"
        stray.write_text(json.dumps({"shopping": ["milk", "eggs"]}))
        tab.locator("#import-upload input[type=file]").set_input_files(str(stray))
        expect(tab.locator("#import-error")).to_contain_text("notes.json: not a known export")
        expect(tab.locator("#import-error")).to_contain_text("Nothing was imported")


class TestExport:
    def test_export_everything_downloads_a_zip_holding_the_persons_chats(
        self, app_server: AppServer, browser: Browser, tmp_path: Path
    ):
        tab = open_tab(browser, app_server, "/settings", user="ezra")
        import_chatgpt(tab, app_server)
        with tab.expect_download(timeout=WAIT_MS) as started:
            tab.locator("#export-all").click()
        saved = tmp_path / "everything.zip"
        started.value.save_as(saved)
        with zipfile.ZipFile(saved) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            titles = sorted(entry["title"] for entry in manifest["chats"])
            assert titles == ["Plotting sine waves", "Short chat"]
            for entry in manifest["chats"]:
                assert json.loads(archive.read(entry["path"]))["messages"]

    def test_a_chats_markdown_export_holds_the_visible_branch(
        self, app_server: AppServer, browser: Browser, tmp_path: Path
    ):
        tab = open_tab(browser, app_server, "/settings", user="mara")
        import_chatgpt(tab, app_server)
        chat_id = chat_id_titled(tab, "Plotting sine waves")
        open_chat(tab, app_server, chat_id)
        tab.locator("#chat-header-menu").click()
        with tab.expect_download(timeout=WAIT_MS) as started:
            tab.locator("#export-chat-markdown").click()
        saved = tmp_path / "chat.md"
        started.value.save_as(saved)
        markdown = saved.read_text()
        assert markdown.startswith("# Plotting sine waves")
        assert "sin(0) is 0.0, so the wave starts at the origin." in markdown
        assert "How do I plot a sine wave?" not in markdown  # the branch not shown

    def test_another_persons_export_address_is_not_found(
        self, app_server: AppServer, browser: Browser
    ):
        owner = open_tab(browser, app_server, "/settings", user="olga")
        import_chatgpt(owner, app_server)
        chat_id = chat_id_titled(owner, "Short chat")
        address = f"{app_server.backend_url}/export/chat/{chat_id}.json"
        assert owner.context.request.get(address).status == 200

        other = app_server.signed_in_context(browser, "pavel")
        for kind in ("json", "md"):
            answer = other.request.get(f"{app_server.backend_url}/export/chat/{chat_id}.{kind}")
            assert answer.status == 404
        assert httpx.get(address).status_code == 401  # no session cookie at all


class TestFork:
    def test_fork_from_the_second_message_opens_a_chat_holding_the_first_two(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server, "/settings", user="finn")
        import_chatgpt(tab, app_server)
        source_id = chat_id_titled(tab, "Plotting sine waves")
        watcher = open_tab(browser, app_server, "/", user="finn")
        open_chat(tab, app_server, source_id)
        messages = tab.locator(".message")
        expect(messages.nth(2)).to_be_visible(timeout=WAIT_MS)
        first_two = [messages.nth(i).locator(".message-text").inner_text() for i in (0, 1)]

        messages.nth(1).locator(".fork-message").click()

        tab.wait_for_url(lambda url: "/chat/" in url and source_id not in url, timeout=WAIT_MS)
        fork_id = tab.url.rstrip("/").rsplit("/", 1)[-1]
        expect(tab.locator("#open-chat-id")).to_have_text(fork_id, timeout=WAIT_MS)
        expect(tab.locator(".message")).to_have_count(2, timeout=WAIT_MS)
        shown = [
            tab.locator(".message").nth(i).locator(".message-text").inner_text() for i in (0, 1)
        ]
        assert shown == first_two
        expect(chat_item(watcher, fork_id)).to_be_visible(timeout=WAIT_MS)
