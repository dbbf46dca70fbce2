"""A server stopped while a reply streams: the reply is kept, marked, and can be answered again.

Production build, its own data folder. A slow offline reply is streaming in a signed-in tab
when the server gets SIGTERM (a clean stop: the lifespan saves each partial reply and marks it
interrupted) or SIGKILL (nothing runs: the next process recovers it from the chat file). After
a restart on the same data (the same port and build: ``restart_app``), the reloaded tab shows
the reply as incomplete with Retry, and Retry answers it in full.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from backend.chats import Chats
from tests.support.app_server import AppServer, restart_app, start_app
from tests.support.deadlines import WAIT_MS, WAIT_S

SLOW_CHUNK_S = "0.25"  # the offline reply (~90 words) takes ~20 s: a stop lands mid-stream
FAST_CHUNK_S = "0.02"  # the last restart: nothing is stopped there
PROMPT = "Tell me about it"  # stopwords only: the offline assistant's fixed reply
FULL_REPLY_START = "I'm the offline assistant"


def start(data_dir: Path, name: str) -> AppServer:
    log = data_dir.parent / f"{name}.log"
    return start_app(data_dir, log, mode="prod", env={"CHATS_OFFLINE_CHUNK_DELAY_S": SLOW_CHUNK_S})


def restart(stopped: AppServer, name: str, chunk_delay_s: str = SLOW_CHUNK_S) -> AppServer:
    log = stopped.data_dir.parent / f"{name}.log"
    return restart_app(stopped, log, env={"CHATS_OFFLINE_CHUNK_DELAY_S": chunk_delay_s})


@pytest.fixture
def servers(data_dir: Path) -> Iterator[list[AppServer]]:
    started: list[AppServer] = []
    yield started
    for server in started:
        server.stop()


def user_id_of(server: AppServer, username: str) -> str:
    server.session_token(username)
    return server.user_id(username)


def open_chat(browser: Browser, server: AppServer, chat_id: str) -> Page:
    page = server.signed_in_context(browser, "erin").new_page()
    page.goto(f"{server.url}/chat/{chat_id}")
    expect(page.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)
    return page


def last_reply(server: AppServer, user_id: str, chat_id: str) -> dict:
    with Chats(server.data_dir, user_id) as chats:
        return chats.get_chat(chat_id).session.get_history()[-1]


def text_of(message: dict) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def kill(server: AppServer, signum: int) -> None:
    os.killpg(server.process.pid, signum)
    server.process.wait(timeout=WAIT_S)


def send_and_stop_mid_reply(page: Page, server: AppServer, signum: int, send) -> None:
    """Start a reply (``send`` clicks what starts it) and stop the server while it streams."""
    send()
    expect(page.locator("#streaming-reply")).to_contain_text("offline assistant", timeout=WAIT_MS)
    kill(server, signum)


def test_a_reply_streaming_when_the_server_stops_is_kept_marked_and_can_be_retried(
    browser: Browser, data_dir: Path, servers: list[AppServer]
):
    """Stopped cleanly (SIGTERM) mid-reply, then killed (SIGKILL) mid-retry: after each restart
    the reply is there, marked interrupted, and Retry answers it; the last Retry in full."""
    first = start(data_dir, "first")
    servers.append(first)
    user_id = user_id_of(first, "erin")
    with Chats(first.data_dir, user_id) as chats:
        chat_id = chats.create_chat("Stopped mid-reply").id
    page = open_chat(browser, first, chat_id)

    def send_prompt() -> None:
        page.locator("#composer").fill(PROMPT)
        page.locator("#composer").press("Enter")

    send_and_stop_mid_reply(page, first, signal.SIGTERM, send_prompt)
    reply = last_reply(first, user_id, chat_id)  # the clean stop saved what had streamed
    assert reply["role"] == "assistant"
    assert text_of(reply).startswith(FULL_REPLY_START)
    assert (reply.get("metadata") or {}).get("status") == "failed", reply.get("metadata")

    second = restart(first, "second")  # slow again: its Retry is killed while it streams
    servers.append(second)
    page = open_chat(browser, second, chat_id)
    interrupted = page.locator(".message-assistant").last
    expect(interrupted.locator(".retry")).to_be_visible(timeout=WAIT_MS)
    expect(interrupted.locator(".message-text")).to_contain_text(FULL_REPLY_START)
    send_and_stop_mid_reply(page, second, signal.SIGKILL, interrupted.locator(".retry").click)
    assert last_reply(second, user_id, chat_id)["role"] == "assistant"

    third = restart(second, "third", FAST_CHUNK_S)  # recovers the killed reply at start
    servers.append(third)
    page = open_chat(browser, third, chat_id)
    interrupted = page.locator(".message-assistant").last
    expect(interrupted.locator(".retry")).to_be_visible(timeout=WAIT_MS)
    interrupted.locator(".retry").click()
    answered = page.locator(".message-assistant").last
    expect(answered.locator(".message-text")).to_contain_text(
        "CHATS_MODEL", timeout=WAIT_MS
    )  # the last sentence of the offline reply: it ran to the end
    expect(answered.locator(".retry")).to_have_count(0)
