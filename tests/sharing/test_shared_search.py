"""A member's message search finds the chats shared with them, labelled, and nothing else of
the owner's (issue 28 item 3), on both engines. ``Sharing.search_messages``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from backend.accounts import User
from backend.chats import Chats
from backend.cli import cli
from backend.config import PostgresLocation, Settings
from backend.sharing import ChatRef, SharedBy, Sharing


@pytest.fixture(autouse=True)
def engine(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = settings.storage
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", str(value))


@pytest.fixture
def directories(
    settings: Settings, owner: User, pat: User, stranger: User
) -> Iterator[dict[str, Chats]]:
    opened = {person.id: Chats(settings.data_dir, person.id) for person in (owner, pat, stranger)}
    yield opened
    for chats in opened.values():
        chats.close()


def write(chats: Chats, title: str, *texts: str) -> str:
    chat_id = chats.create_chat(title).id
    session = chats.get_chat(chat_id).session
    for number, text in enumerate(texts):
        session.append_message(
            {"id": f"m{number}", "role": "user", "parts": [{"type": "text", "text": text}]}
        )
    return chat_id


@pytest.fixture
def trip(sharing: Sharing, owner: User, directories: dict[str, Chats]) -> ChatRef:
    """The owner's kayak chat, shared with pat; the owner also has a private kayak chat."""
    mine = directories[owner.id]
    write(mine, "Money", "the kayak cost 900 euros of my savings")
    chat = ChatRef(owner_id=owner.id, chat_id=write(mine, "Trip", "we paddle the kayak north"))
    sharing.share(owner, chat, "pat", "participant")
    return chat


def search(sharing: Sharing, person: User, directories: dict[str, Chats], query: str, **kw):
    return sharing.search_messages(
        person, directories[person.id], directories.__getitem__, query, **kw
    )


class TestMemberSearch:
    def test_a_member_finds_their_own_and_the_shared_chat_labelled_and_nothing_else(
        self, sharing, owner, pat, directories, trip
    ):
        own_chat = write(directories[pat.id], "Mine", "my own kayak is red")
        hits = search(sharing, pat, directories, "kayak")
        assert {(hit.chat_id, hit.shared_by) for hit in hits} == {
            (own_chat, None),
            (trip.chat_id, SharedBy(owner_id=owner.id, owner_username="olivia", chat_title="Trip")),
        }
        shared = next(hit for hit in hits if hit.shared_by is not None)
        assert shared.chat == trip
        assert shared.message_id == "m0"
        assert "paddle" in shared.snippet
        assert all("savings" not in hit.snippet for hit in hits)  # the owner's private chat

    def test_hits_are_best_first_and_the_limit_is_global(self, sharing, pat, directories, trip):
        write(directories[pat.id], "Mine", "kayak", "kayak kayak trip", "a kayak")
        hits = search(sharing, pat, directories, "kayak", limit=2)
        assert len(hits) == 2
        everything = search(sharing, pat, directories, "kayak")
        assert len(everything) == 4
        ranks = [hit.rank for hit in everything]
        assert ranks == sorted(ranks)

    def test_a_viewer_finds_it_too(self, sharing, owner, stranger, directories, trip):
        sharing.share(owner, trip, "sam", "viewer")
        assert [hit.chat for hit in search(sharing, stranger, directories, "kayak")] == [trip]


class TestNothingElse:
    def test_a_stranger_finds_nothing_of_the_owners(self, sharing, stranger, directories, trip):
        assert search(sharing, stranger, directories, "kayak") == []

    def test_removal_leaving_and_deletion_take_the_hits_away_at_once(
        self, sharing, owner, pat, directories, trip
    ):
        assert len(search(sharing, pat, directories, "kayak")) == 1
        sharing.remove_member(owner, trip, pat.id)
        assert search(sharing, pat, directories, "kayak") == []
        sharing.share(owner, trip, "pat", "viewer")
        sharing.leave(pat, trip)
        assert search(sharing, pat, directories, "kayak") == []
        sharing.share(owner, trip, "pat", "viewer")
        sharing.chat_deleted(owner, trip)
        assert search(sharing, pat, directories, "kayak") == []
        sharing.chat_restored(owner, trip)
        assert len(search(sharing, pat, directories, "kayak")) == 1

    def test_a_chat_the_owners_directory_no_longer_has_gives_nothing(
        self, sharing, owner, pat, directories, trip
    ):
        directories[owner.id].delete_chat(trip.chat_id)  # not yet announced to sharing
        assert search(sharing, pat, directories, "kayak") == []

    def test_the_owners_own_search_is_unchanged(self, sharing, owner, directories, trip):
        hits = search(sharing, owner, directories, "kayak")
        assert len(hits) == 2
        assert all(hit.shared_by is None for hit in hits)


@pytest.mark.sqlite_only  # the CLI finds accounts by their file (backend/cli/context.py)
class TestCommandLine:
    def test_chats_search_lists_the_shared_hits_with_their_owner(
        self, settings, owner, pat, directories, trip
    ):
        directories[owner.id].flush_index()  # what the app's writer does after its writes
        runner = CliRunner(env={"CHATS_DATA_DIR": str(settings.data_dir)})
        result = runner.invoke(cli, ["search", "--user", "pat", "kayak", "--json"])
        assert result.exit_code == 0, result.output
        assert [(h["chat_id"], h["shared_by"]) for h in json.loads(result.output)] == [
            (trip.chat_id, {"owner_id": owner.id, "owner_username": "olivia", "chat_title": "Trip"})
        ]
        lines = runner.invoke(cli, ["search", "--user", "pat", "kayak"]).output.splitlines()
        assert len(lines) == 1 and lines[0].endswith("\tshared by olivia")
        mine = json.loads(
            runner.invoke(cli, ["search", "--user", "olivia", "kayak", "--json"]).output
        )
        assert len(mine) == 2 and all(hit["shared_by"] is None for hit in mine)
