"""Storage economics, pinned as exact row counts from ``Database.stats``.

A row write is the expensive operation on any SQLite host; these tests make a regression in
how many rows an operation touches a visible, exact diff. ``rows_written`` counts every row
SQLite changed (``total_changes``); ``rows_read`` counts rows returned to Python.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from itertools import islice

from backend.sessions import create_compact_function
from backend.storage import OpStats
from tests.sessions.conftest import append_chain, raw_db, text_message


def cost(session, operation: Callable[[], object]) -> OpStats:
    before = session._db.stats.snapshot()
    operation()
    return session._db.stats - before


def image(message_id: str, size: int) -> dict:
    data = base64.b64encode(os.urandom(size)).decode()
    return {
        "id": message_id,
        "role": "user",
        "parts": [
            {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{data}"}
        ],
    }


# FTS5 keeps each indexed document in several shadow tables (content, docsize, the segment
# data and its structure record), and SQLite counts those rows as changes too: indexing one
# short document in a small index changes 7 rows; replacing one (delete + insert) changes 10.
# These are the numbers of this SQLite build for a freshly built index (FTS5 merges segments
# every so often, so a long-lived index varies); they are why the index waits for a search.
FTS_ROWS_PER_INSERT = 7
FTS_ROWS_PER_REPLACE = 10
# PostgreSQL's index is a document row and a row per part (one for a short text); a replace
# deletes the document (its parts go with it, uncounted) and inserts both again.
PG_ROWS_PER_INSERT = 2
PG_ROWS_PER_REPLACE = 3


def index_rows(session, *, replace: bool = False) -> int:
    if session._db.engine_kind == "postgresql":
        return PG_ROWS_PER_REPLACE if replace else PG_ROWS_PER_INSERT
    return FTS_ROWS_PER_REPLACE if replace else FTS_ROWS_PER_INSERT


class TestTextMessages:
    def test_a_text_append_writes_exactly_one_row_in_four_statements(self, session):
        append_chain(session, "warm")  # the tail is read once per handle lifetime
        spent = cost(session, lambda: session.append_message(text_message("m")))
        assert spent.rows_written == 1
        # BEGIN, PRAGMA data_version, INSERT, COMMIT; PostgreSQL sends the COMMIT uncounted
        assert spent.statements == (4 if session._db.engine_kind == "sqlite" else 3)
        assert spent.rows_read == 0

    def test_twenty_appends_write_twenty_rows(self, session):
        spent = cost(session, lambda: append_chain(session, *(f"m{i}" for i in range(20))))
        assert spent.rows_written == 20

    def test_a_duplicate_append_writes_nothing(self, session):
        append_chain(session, "m")
        spent = cost(session, lambda: session.append_message(text_message("m", "other")))
        assert spent.rows_written == 0
        assert spent.rows_read == 1  # the stored message it returns

    def test_a_refused_overlay_echo_touches_nothing_at_all(self, session):
        spent = cost(session, lambda: session.append_message(text_message("compaction_x")))
        assert spent == OpStats(0, 0, 0)

    def test_an_explicit_parent_costs_one_read_unless_it_is_the_leaf(self, session):
        append_chain(session, "a", "b")
        to_leaf = cost(session, lambda: session.append_message(text_message("c"), parent_id="b"))
        to_other = cost(session, lambda: session.append_message(text_message("d"), parent_id="a"))
        assert (to_leaf.rows_read, to_leaf.rows_written) == (0, 1)
        assert (to_other.rows_read, to_other.rows_written) == (1, 1)

    def test_an_unchanged_update_reads_one_row_and_writes_none(self, session):
        append_chain(session, "m")
        spent = cost(session, lambda: session.update_message(text_message("m")))
        assert (spent.rows_read, spent.rows_written) == (1, 0)

    def test_a_changed_update_writes_one_row(self, session):
        append_chain(session, "m")
        spent = cost(session, lambda: session.update_message(text_message("m", "new")))
        assert spent.rows_written == 1

    def test_an_update_of_an_absent_id_writes_nothing(self, session):
        spent = cost(session, lambda: session.update_message(text_message("ghost")))
        assert (spent.rows_read, spent.rows_written) == (0, 0)

    def test_an_undigested_row_is_stamped_once_by_its_first_unchanged_update(self, session):
        append_chain(session, "m")
        raw_db(session).execute("UPDATE session_messages SET content_hash = NULL")
        first = cost(session, lambda: session.update_message(text_message("m")))
        second = cost(session, lambda: session.update_message(text_message("m")))
        assert first.rows_written == 1  # the digest stamp
        assert second.rows_written == 0


class TestContinuationRows:
    BODY = "z" * (3_200_000)

    def test_a_3_mib_message_writes_its_row_and_two_continuations(self, session):
        spent = cost(session, lambda: session.append_message(text_message("big", self.BODY)))
        assert spent.rows_written == 3

    def test_an_unchanged_update_of_a_chunked_message_reads_one_row(self, session):
        session.append_message(text_message("big", self.BODY))
        spent = cost(session, lambda: session.update_message(text_message("big", self.BODY)))
        assert (spent.rows_read, spent.rows_written) == (1, 0)

    def test_a_changed_update_of_a_chunked_message_rewrites_three_rows(self, session):
        session.append_message(text_message("big", self.BODY))
        changed = text_message("big", self.BODY[:-1] + "!")
        spent = cost(session, lambda: session.update_message(changed))
        assert (spent.rows_read, spent.rows_written) == (1, 3)

    def test_a_window_without_continuations_issues_no_continuation_query(self, session):
        append_chain(session, "a", "b", "c")
        spent = cost(session, session.get_history)
        # PRAGMA data_version, the path, the compactions, one content window
        assert spent.statements == 4


class TestDeletes:
    def test_deleting_a_prefix_of_nineteen_rows_writes_twenty(self, session):
        names = [f"m{i}" for i in range(20)]
        append_chain(session, *names)
        spent = cost(session, lambda: session.delete_messages(names[:19]))
        assert spent.rows_written == 20  # 19 deletes and the one child spliced to the root

    def test_deleting_a_leaf_writes_one_row(self, session):
        append_chain(session, "a", "b")
        assert cost(session, lambda: session.delete_messages(["b"])).rows_written == 1

    def test_deleting_unknown_ids_writes_nothing(self, session):
        append_chain(session, "a")
        assert cost(session, lambda: session.delete_messages(["ghost"])).rows_written == 0


class TestAttachments:
    def test_a_200_kb_image_writes_four_rows(self, session):
        spent = cost(session, lambda: session.append_message(image("img", 200_000)))
        assert spent.rows_written == 4  # message, one payload chunk, payload meta, reference

    def test_a_2_mib_image_writes_five_rows(self, session):
        spent = cost(session, lambda: session.append_message(image("img", 2 * 1024 * 1024)))
        assert spent.rows_written == 5

    def test_a_payload_already_stored_costs_one_read_and_no_payload_write(self, session):
        first = image("a", 50_000)
        session.append_message(first)
        second = {**first, "id": "b"}
        spent = cost(session, lambda: session.append_message(second))
        assert spent.rows_written == 2  # message and reference only
        assert spent.rows_read == 1


class TestIndexMaintenance:
    def test_with_an_index_an_append_also_writes_the_index(self, session):
        session.search("build the index")
        spent = cost(session, lambda: session.append_message(text_message("m")))
        assert spent.rows_written == 1 + index_rows(session)

    def test_with_an_index_a_changed_update_rewrites_the_index_entry(self, session):
        append_chain(session, "m")
        session.search("build the index")
        spent = cost(session, lambda: session.update_message(text_message("m", "changed")))
        assert spent.rows_written == 1 + index_rows(session, replace=True)

    def test_an_update_that_keeps_the_text_leaves_the_index_alone(self, session):
        session.append_message({**text_message("m"), "metadata": {"v": 1}})
        session.search("build the index")
        spent = cost(
            session,
            lambda: session.update_message({**text_message("m"), "metadata": {"v": 2}}),
        )
        assert spent.rows_written == 1


class TestReadCosts:
    def test_two_hundred_threshold_checked_appends_read_few_rows(self, session):
        session.on_compaction(create_compact_function(lambda p: "s")).compact_after(10**9)
        spent = cost(session, lambda: append_chain(session, *(f"m{i}" for i in range(200))))
        assert spent.rows_read < 1_200
        assert spent.rows_written == 200

    def test_a_compacted_prefix_stays_unread_on_a_short_newest_first_read(self, session):
        names = [f"m{i}" for i in range(200)]
        append_chain(session, *names)
        session.add_compaction("old stuff", "m0", "m150")
        session.get_latest_leaf()
        spent = cost(session, lambda: list(islice(session.history(newest_first=True), 3)))
        assert spent.rows_read <= 4  # compactions, then three rows

    def test_the_token_estimate_is_read_once_per_leaf(self, session):
        append_chain(session, *(f"m{i}" for i in range(50)))
        session.token_estimate()
        spent = cost(session, session.token_estimate)
        assert spent.rows_read == 0
