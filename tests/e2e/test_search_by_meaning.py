"""Search by meaning in the sidebar (issue 29): the bundled model, offline, in a real app.

An app of its own with the bundled embedder on (the other stories run without it). Alice's
chats were written before she opens the app, so her vectors are still missing: the first
search finds words only and says so, and the tab searches again by itself once the worker
has caught up. Bob's chat says the same thing as one of hers and never reaches her results.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from backend.chats import Chats
from chatsapp.chat_route import chat_path
from tests.e2e.helpers import open_tab
from tests.support.app_server import AppServer, start_app
from tests.support.deadlines import WAIT_MS

# No content word in common with the query below (puppy/pet, chewing/damaging,
# couch cushions/sofa): only its meaning can find it (the bundled model scores them 0.83,
# above its relevance floor of 0.81; the other two chats 0.77 and 0.74, below it).
PUPPY = "My puppy keeps chewing the couch cushions every afternoon"
QUERY = "pet damaging the sofa"
ALICES = {
    "Pet trouble": PUPPY,
    "Printer": "The inkjet jams whenever I print envelopes",
    "Garden": "The tomato seedlings on the balcony need more sun",
}
BOBS = {"Bob's dog": "Our pet keeps damaging the sofa"}  # the query's own words


@pytest.fixture(scope="module")
def meaning_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("meaning")
    server = start_app(base / "data", base / "app.log", env={"CHATS_EMBEDDER": "bundled"})
    yield server
    server.stop()


def write_chats(server: AppServer, username: str, chats: dict[str, str]) -> dict[str, str]:
    """``chats`` (title: first message) in ``username``'s directory; their ids by title."""
    server.session_token(username)
    ids: dict[str, str] = {}
    with Chats(server.data_dir, server.user_id(username)) as directory:
        for title, text in chats.items():
            chat = directory.create_chat(title)
            message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}
            directory.get_chat(chat.id).session.append_message(message)
            ids[title] = chat.id
    return ids


def search_messages(page: Page, query: str) -> None:
    if not page.locator("#message-search").is_visible():
        page.locator("#toggle-message-search").click()
    box = page.locator("#message-search")
    box.fill(query)
    box.press("Enter")


def hit_hrefs(page: Page) -> list[str]:
    return [link.get_attribute("href") or "" for link in page.locator(".message-hit").all()]


def test_a_search_finds_a_chat_by_its_meaning_and_exact_words_still_come_first(
    meaning_app: AppServer, browser: Browser
):
    alices = write_chats(meaning_app, "alice", ALICES)
    bobs = write_chats(meaning_app, "bob", BOBS)
    page = open_tab(browser, meaning_app, user="alice")

    search_messages(page, QUERY)
    best = page.locator(".message-hit").first
    # The first answer may be words only ("Still indexing…"); the tab searches again when
    # the vectors have caught up, and the puppy chat leads by meaning.
    expect(best).to_have_attribute("href", chat_path(alices["Pet trouble"], "m1"), timeout=WAIT_MS)
    expect(page.locator("#message-search-incomplete")).to_have_count(0, timeout=WAIT_MS)
    assert not any(bobs["Bob's dog"] in href for href in hit_hrefs(page))

    search_messages(page, "envelopes")  # a word of one chat: the words' hit comes first
    expect(page.locator(".message-hit").first).to_have_attribute(
        "href", chat_path(alices["Printer"], "m1"), timeout=WAIT_MS
    )
