"""Which message a share link ends at (``chatsapp.states.share_links``): the owner picks any
message of the branch the tab shows, newest first; the snapshot is the path up to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import Settings
from chatsapp import services as services_module
from chatsapp.routes.share_link import process_sharing
from chatsapp.services import Services
from chatsapp.states.share_links import ASSISTANT_NAME, link_ends, snapshot_of
from tests.support.signed_in import sign_in


@pytest.fixture
def app_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Services:
    settings = Settings.from_env(
        {"CHATS_DATA_DIR": str(tmp_path / "data"), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
    )
    made = Services(settings)
    monkeypatch.setattr(services_module, "_services", made)
    return made


def message(message_id: str, role: str, text: str, author: str = "") -> dict:
    found: dict = {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}
    if author:
        found["metadata"] = {"author": {"id": "x", "name": author}}
    return found


@pytest.fixture
def two_branches(app_services: Services):
    """u1 → a1 → u2 → a2 (the branch shown), and u2b answering a1 on another branch."""
    owner_id, _ = sign_in(app_services, "olivia")
    chats = app_services.directory(owner_id)
    chat = chats.get_chat(chats.create_chat("Kayaks").id)
    session = chat.session
    session.append_message(message("u1", "user", "Which  kayak\nfor a lake?"))
    session.append_message(message("a1", "assistant", "A touring kayak. " + "x" * 100))
    session.append_message(message("u2", "user", "And for two?", author="pat"))
    session.append_message(message("a2", "assistant", "A tandem."))
    session.append_message(message("u2b", "user", "Another branch"), parent_id="a1")
    return chat, owner_id


class TestTheChoices:
    def test_every_message_of_the_shown_branch_newest_first_with_its_author(self, two_branches):
        chat, owner_id = two_branches
        ends = link_ends(chat, "a2", owner_id)
        assert [end.id for end in ends] == ["a2", "u2", "a1", "u1"]
        assert ends[0].label == f"newest · #4 {ASSISTANT_NAME}: A tandem."
        assert ends[1].label == "#3 pat: And for two?"
        assert ends[3].label == "#1 olivia: Which kayak for a lake?"  # whitespace folded
        assert len(ends[2].label) < 80 and ends[2].label.endswith("…")

    def test_another_branch_lists_its_own_path(self, two_branches):
        chat, owner_id = two_branches
        assert [end.id for end in link_ends(chat, "u2b", owner_id)] == ["u2b", "a1", "u1"]


class TestTheSnapshotEndsAtTheChoice:
    def test_up_to_a_chosen_message_holds_that_path_and_nothing_after(self, two_branches):
        chat, owner_id = two_branches
        chosen = snapshot_of(chat, "a1", owner_id)
        assert [(m.author, m.text[:16]) for m in chosen] == [
            ("olivia", "Which  kayak\nfor"),
            (ASSISTANT_NAME, "A touring kayak."),
        ]
        whole = snapshot_of(chat, "a2", owner_id)
        assert [m.author for m in whole] == ["olivia", ASSISTANT_NAME, "pat", ASSISTANT_NAME]


def test_the_link_page_uses_the_processs_one_sharing_service(app_services: Services):
    assert process_sharing() is app_services.sharing()
