"""A location names a conversation on either engine: the same path reopened sees the same
conversation, two paths share nothing, and on PostgreSQL nothing touches the disk."""

from __future__ import annotations

import pytest

from backend.errors import NotFoundError
from backend.sessions import SearchableDocuments, Sessions
from tests.sessions.conftest import append_chain, ids, text_message


def on_postgresql(storage) -> bool:
    return storage != "sqlite"


class TestLocations:
    def test_two_paths_share_nothing(self, tmp_path):
        with Sessions(tmp_path / "a.sqlite") as first, Sessions(tmp_path / "b.sqlite") as second:
            append_chain(first.session(), "m1")
            append_chain(second.session(), "m2")
            assert ids(first.session().get_history()) == ["m1"]
            assert ids(second.session().get_history()) == ["m2"]
            assert [hit.id for hit in second.session().search("text")] == ["m2"]

    def test_a_relative_and_an_absolute_spelling_name_the_same_conversation(
        self, tmp_path, monkeypatch
    ):
        monkeypatch.chdir(tmp_path)
        with Sessions("c.sqlite") as relative:
            append_chain(relative.session(), "m1")
        with Sessions(tmp_path / "c.sqlite") as absolute:
            assert ids(absolute.session().get_history()) == ["m1"]

    def test_the_file_exists_only_on_sqlite(self, tmp_path, storage):
        path = tmp_path / "chats" / "c.sqlite"
        path.parent.mkdir()
        with Sessions(path) as store:
            append_chain(store.session(), "m1")
        assert path.exists() is not on_postgresql(storage)
        assert list(path.parent.iterdir()) == ([] if on_postgresql(storage) else [path])

    def test_documents_of_a_conversation_never_opened_are_none(self, tmp_path):
        with SearchableDocuments.open(tmp_path / "never.sqlite") as documents:
            assert documents is None
        with Sessions(tmp_path / "c.sqlite") as store:
            append_chain(store.session("s"), "m1")
        with SearchableDocuments.open(tmp_path / "c.sqlite") as documents:
            assert documents is not None
            assert documents.texts("s") == {"m1": "text of m1"}


class TestDroppingRows:
    def test_on_postgresql_a_dropped_conversation_is_empty_and_refuses_writes(
        self, tmp_path, storage
    ):
        path, other = tmp_path / "c.sqlite", tmp_path / "other.sqlite"
        with Sessions(other) as neighbour:
            append_chain(neighbour.session(), "kept")
        with Sessions(path) as holder:
            append_chain(holder.session(), "m1", "m2")
            holder.session().search("text")  # builds the index, whose rows go too
            dropped = Sessions.drop_conversation_rows(path)
            assert dropped is on_postgresql(storage)
            if not dropped:  # SQLite: the owner removes the file; the rows stay until then
                assert ids(holder.session().get_history()) == ["m1", "m2"]
                return
            with pytest.raises(NotFoundError):
                holder.session().append_message(text_message("m3"))
        with Sessions(path) as reopened:
            assert reopened.session().get_history() == []
            assert reopened.session().search("text") == []
            with pytest.raises(NotFoundError):
                reopened.session().append_message(text_message("m3"))
        with Sessions(other) as neighbour:
            assert ids(neighbour.session().get_history()) == ["kept"]

    def test_dropping_a_conversation_never_opened_reports_false(self, tmp_path):
        assert Sessions.drop_conversation_rows(tmp_path / "never.sqlite") is False
        assert not (tmp_path / "never.sqlite").exists()
