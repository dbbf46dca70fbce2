"""A retired file refuses writes on every connection: nothing is acknowledged into a file that
its owner is about to delete. Reads still work (reads degrade, writes raise)."""

from __future__ import annotations

import pytest

from backend.errors import ChatNotFoundError, NotFoundError
from backend.sessions import Sessions
from tests.sessions.conftest import append_chain, ids, text_message


class TestRetiredFiles:
    def test_another_connection_refuses_writes_once_the_file_is_retired(self, db_path):
        with Sessions(db_path) as holder:
            append_chain(holder.session(), "a")
            assert Sessions.retire_file(db_path)
            with pytest.raises(NotFoundError) as raised:
                holder.session().append_message(text_message("b"))
            assert isinstance(raised.value, KeyError)
            assert ids(holder.session().get_history()) == ["a"]

    def test_the_refusal_is_sticky(self, db_path):
        with Sessions(db_path) as holder:
            session = holder.session()
            append_chain(session, "a")
            Sessions.retire_file(db_path)
            for _ in range(3):
                with pytest.raises(NotFoundError):
                    session.append_message(text_message("b"))
            assert session.get_message("b") is None

    def test_a_read_that_notices_the_mark_first_still_makes_the_next_write_fail(self, db_path):
        with Sessions(db_path) as holder:
            session = holder.session()
            append_chain(session, "a")
            Sessions.retire_file(db_path)
            assert ids(session.get_history()) == ["a"]
            with pytest.raises(NotFoundError):
                session.append_message(text_message("b"))

    def test_the_owner_chooses_the_error(self, db_path):
        with Sessions(db_path, retired_error=lambda: ChatNotFoundError("c1")) as holder:
            append_chain(holder.session(), "a")
            Sessions.retire_file(db_path)
            with pytest.raises(ChatNotFoundError, match="c1"):
                holder.session().append_message(text_message("b"))

    def test_retiring_through_a_connection_refuses_its_own_writes_too(self, db_path):
        with Sessions(db_path) as holder:
            holder.retire()
            with pytest.raises(NotFoundError):
                holder.session().append_message(text_message("a"))

    def test_a_file_opened_after_it_was_retired_refuses_writes(self, db_path):
        Sessions(db_path).close()
        Sessions.retire_file(db_path)
        with Sessions(db_path) as late, pytest.raises(NotFoundError):
            late.session().append_message(text_message("a"))

    def test_retiring_a_missing_file_creates_nothing(self, db_path):
        assert Sessions.retire_file(db_path) is False
        assert not db_path.exists()

    def test_writes_of_a_live_file_are_not_refused_by_foreign_commits(self, db_path):
        with Sessions(db_path) as first, Sessions(db_path) as second:
            append_chain(first.session(), "a")
            append_chain(second.session(), "b")
            append_chain(first.session(), "c")
            assert ids(first.session().get_history()) == ["a", "b", "c"]
