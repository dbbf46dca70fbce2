"""Reads: streamed history (both directions), batches, byte-budgeted recent history, row stats,
point reads, branches, and the 10,000-parent path cap."""

from __future__ import annotations

import json
from itertools import islice

import pytest

from backend.sessions import MAX_PATH_DEPTH, RecentHistory, Session
from tests.sessions.conftest import append_chain, ids, raw_db, text_message


def import_chain(session: Session, count: int, prefix: str = "m") -> list[str]:
    """A linear chain of ``count`` rows written in one transaction (fast bulk setup)."""
    chain = [f"{prefix}{i}" for i in range(count)]
    with session._db.transaction():
        parent = None
        for index, message_id in enumerate(chain):
            session.import_message(
                text_message(message_id, "x"), parent_id=parent, created_at=index
            )
            parent = message_id
    return chain


class TestStreamedHistory:
    def test_an_empty_session_streams_nothing(self, session):
        assert list(session.history()) == []
        assert list(session.history(newest_first=True)) == []

    def test_an_unknown_leaf_streams_nothing(self, session):
        append_chain(session, "a", "b")
        assert list(session.history(leaf_id="ghost")) == []
        assert list(session.history(leaf_id="ghost", newest_first=True)) == []

    def test_a_branch_leaf_streams_that_branch(self, session):
        append_chain(session, "a", "b1")
        session.append_message(text_message("b2"), parent_id="a")
        assert ids(session.history(leaf_id="b1")) == ["a", "b1"]
        assert ids(session.history(leaf_id="b1", newest_first=True)) == ["b1", "a"]

    @pytest.mark.parametrize("count", [49, 50, 51, 101])
    def test_keeps_order_across_content_window_boundaries(self, session, count):
        chain = import_chain(session, count)
        assert ids(session.history()) == chain
        assert ids(session.history(leaf_id=chain[count // 2])) == chain[: count // 2 + 1]

    def test_loads_content_in_windows_of_at_most_fifty_rows(self, session):
        import_chain(session, 120)
        db = session._db
        before = db.stats.snapshot()
        stream = session.history()
        first = list(islice(stream, 1))
        after_first = db.stats - before
        assert ids(first) == ["m0"]
        # the content-free path (120 rows) plus one window of 50 rows, nothing more
        assert after_first.rows_read <= 120 + 50 + 5
        rest = list(stream)
        assert len(rest) == 119

    def test_a_window_also_stops_at_four_mebibytes(self, session):
        big = "y" * (1024 * 1024)
        for index in range(6):
            session.append_message(text_message(f"b{index}", big))
        statements: list[int] = []
        stream = session.history()
        db = session._db
        for _ in stream:
            statements.append(db.stats.statements)
        # six 1 MiB rows need two content windows (4 MiB each): content loads happen twice
        windows = len(set(statements))
        assert windows == 2

    def test_newest_first_equals_the_reversed_forward_read(self, session):
        append_chain(session, *(f"m{i}" for i in range(30)))
        session.append_message(text_message("alt"), parent_id="m10")
        for leaf in (None, "m29", "alt"):
            forward = list(session.history(leaf_id=leaf))
            assert list(session.history(leaf_id=leaf, newest_first=True)) == forward[::-1]

    def test_newest_first_stops_reading_when_the_consumer_stops(self, session):
        import_chain(session, 200)
        db = session._db
        session.get_latest_leaf()  # warm the tail
        before = db.stats.snapshot()
        for message in session.history(newest_first=True):
            assert message["id"] == "m199"
            break
        assert (db.stats - before).rows_read <= 3

    def test_finding_an_owner_three_rows_from_the_leaf_reads_a_handful_of_rows(self, session):
        import_chain(session, 200)
        db = session._db
        session.get_latest_leaf()
        before = db.stats.snapshot()
        found = next(m for m in session.history(newest_first=True) if m["id"] == "m196")
        cheap = (db.stats - before).rows_read
        before = db.stats.snapshot()
        session.get_history()
        full = (db.stats - before).rows_read
        assert found["id"] == "m196"
        assert cheap < 12
        assert full > 390

    def test_skips_a_corrupted_row_and_keeps_the_rest(self, session):
        append_chain(session, "a", "b", "c")
        raw_db(session).execute(
            "UPDATE session_messages SET content = '{not json' WHERE session_id = '' AND id = 'b'"
        )
        assert ids(session.history()) == ["a", "c"]
        assert ids(session.history(newest_first=True)) == ["c", "a"]
        assert session.get_message("b") is None

    def test_skips_rows_that_parse_but_are_not_messages(self, session):
        append_chain(session, "a", "b")
        raw_db(session).execute(
            "UPDATE session_messages SET content = ? WHERE session_id = '' AND id = 'a'",
            (json.dumps({"id": "a", "role": "user"}),),
        )
        assert ids(session.history()) == ["b"]

    def test_get_history_materialises_the_stream(self, session):
        append_chain(session, "a", "b")
        assert session.get_history() == list(session.history())


class TestHistoryBatches:
    def test_batches_by_count(self, session):
        append_chain(session, *"abcde")
        sizes = [len(batch) for batch in session.history_batches(batch_size=2)]
        assert sizes == [2, 2, 1]

    def test_batches_by_serialised_bytes(self, session):
        append_chain(session, "m1", "m2", "m3", "m4", "m5")
        one = len(json.dumps(text_message("m1"), separators=(",", ":")).encode())
        batches = list(session.history_batches(max_batch_bytes=one + 10))
        assert [len(batch) for batch in batches] == [1, 1, 1, 1, 1]

    def test_a_message_larger_than_the_byte_limit_is_yielded_alone(self, session):
        session.append_message(text_message("small", "s"))
        session.append_message(text_message("huge", "h" * 10_000))
        session.append_message(text_message("tail", "t"))
        batches = list(session.history_batches(max_batch_bytes=1_000))
        assert [ids(batch) for batch in batches] == [["small"], ["huge"], ["tail"]]

    def test_nonsense_limits_are_clamped_to_one(self, session):
        append_chain(session, "a", "b")
        assert [len(b) for b in session.history_batches(batch_size=0, max_batch_bytes=-5)] == [1, 1]

    def test_batches_concatenate_to_the_history(self, session):
        append_chain(session, *(f"m{i}" for i in range(23)))
        flat = [m for batch in session.history_batches(batch_size=5) for m in batch]
        assert flat == session.get_history()


class TestRecentHistory:
    def test_an_empty_session_has_no_recent_history(self, session):
        assert session.get_recent_history(1_000) == RecentHistory([], False, 0)

    def test_a_budget_that_fits_everything_returns_everything_untruncated(self, session):
        append_chain(session, "a", "b", "c")
        recent = session.get_recent_history(10_000_000)
        assert ids(recent.messages) == ["a", "b", "c"]
        assert recent.truncated is False

    def test_a_budget_for_two_rows_returns_the_newest_two_and_says_so(self, session):
        append_chain(session, "a", "b", "c")
        stats = session.get_history_row_stats()
        recent = session.get_recent_history(stats[1].bytes + stats[2].bytes)
        assert ids(recent.messages) == ["b", "c"]
        assert recent.truncated is True

    def test_the_newest_message_is_always_included_even_over_budget(self, session):
        append_chain(session, "a", "b")
        recent = session.get_recent_history(1)
        assert ids(recent.messages) == ["b"]
        assert recent.truncated is True

    def test_total_content_bytes_is_the_whole_visible_path(self, session):
        append_chain(session, "a", "b", "c")
        stats = session.get_history_row_stats()
        assert session.get_recent_history(1).total_content_bytes == sum(s.bytes for s in stats)

    def test_reads_the_chosen_branch(self, session):
        append_chain(session, "a", "b")
        session.append_message(text_message("c"), parent_id="a")
        assert ids(session.get_recent_history(10**9, leaf_id="b").messages) == ["a", "b"]

    def test_applies_an_overlay_that_lies_inside_the_window(self, session):
        append_chain(session, "m0", "m1", "m2", "m3")
        session.add_compaction("summary", "m1", "m2")
        recent = session.get_recent_history(10**9)
        assert recent.messages[0]["id"] == "m0"
        assert recent.messages[1]["id"].startswith("compaction_")
        assert ids(recent.messages[2:]) == ["m3"]

    def test_shows_raw_rows_when_an_overlay_starts_before_the_window(self, session):
        append_chain(session, "m0", "m1", "m2", "m3")
        session.add_compaction("summary", "m0", "m2")
        stats = session.get_history_row_stats()
        recent = session.get_recent_history(stats[2].bytes + stats[3].bytes)
        assert ids(recent.messages) == ["m2", "m3"]


class TestRowStats:
    def test_reports_every_visible_row_root_first_without_content(self, session):
        append_chain(session, "a", "b")
        session.append_message(text_message("c", role="assistant"))
        stats = session.get_history_row_stats()
        assert [(s.id, s.role) for s in stats] == [("a", "user"), ("b", "user"), ("c", "assistant")]
        stored = len(json.dumps(text_message("a"), separators=(",", ":")).encode())
        assert stats[0].bytes == stored
        assert all(s.token_estimate > 0 for s in stats)

    def test_reads_a_given_leaf(self, session):
        append_chain(session, "a", "b")
        session.append_message(text_message("c"), parent_id="a")
        assert [s.id for s in session.get_history_row_stats("b")] == ["a", "b"]

    def test_an_unknown_leaf_has_no_stats(self, session):
        assert session.get_history_row_stats("ghost") == []


class TestPointReads:
    def test_get_message_returns_none_for_an_unknown_id(self, session):
        assert session.get_message("ghost") is None

    def test_get_latest_leaf_is_none_for_an_empty_session(self, session):
        assert session.get_latest_leaf() is None

    def test_get_branches_lists_children_in_insertion_order(self, session):
        append_chain(session, "a", "b1")
        session.append_message(text_message("b2"), parent_id="a")
        session.append_message(text_message("b3"), parent_id="a")
        assert ids(session.get_branches("a")) == ["b1", "b2", "b3"]
        assert session.get_branches("b3") == []
        assert session.get_branches("ghost") == []


class TestPathCap:
    @pytest.mark.slow
    def test_a_path_of_exactly_the_cap_plus_one_rows_is_complete(self, session):
        chain = import_chain(session, MAX_PATH_DEPTH + 1)
        recent = session.get_recent_history(10**12)
        assert len(recent.messages) == MAX_PATH_DEPTH + 1
        assert recent.truncated is False
        assert ids(session.history())[0] == chain[0]

    @pytest.mark.slow
    def test_a_longer_path_shows_only_the_newest_rows_and_is_truncated(self, session):
        chain = import_chain(session, MAX_PATH_DEPTH + 2)
        recent = session.get_recent_history(10**12)
        assert len(recent.messages) == MAX_PATH_DEPTH + 1
        assert recent.messages[0]["id"] == chain[1]
        assert recent.truncated is True
        forward = ids(session.history())
        assert forward == chain[1:]
        backward = ids(session.history(newest_first=True))
        assert backward == forward[::-1]

    @pytest.mark.slow
    def test_a_hidden_overlay_echo_counts_toward_the_cap(self, session):
        total = MAX_PATH_DEPTH + 1
        compaction = session.add_compaction("s", "ghost-a", "ghost-b")
        echo = f"compaction_{compaction.id}"
        chain = [f"m{i}" for i in range(total)]
        with session._db.transaction():
            parent = None
            for index, message_id in enumerate(chain):
                session.import_message(
                    text_message(message_id, "x"), parent_id=parent, created_at=index
                )
                parent = message_id
                if index == total // 2:  # an echo row stored before the write guard existed
                    session.import_message(
                        text_message(echo, "echo"), parent_id=parent, created_at=index
                    )
                    parent = echo
        recent = session.get_recent_history(10**12)
        assert recent.truncated is True
        assert ids(recent.messages) == chain[1:]  # 10,001 rows walked, the echo among them
        per_row = session.get_history_row_stats()[0].token_estimate
        assert session.token_estimate() == per_row * (total - 1)


class TestRootBranches:
    def test_get_branches_of_none_lists_the_roots_in_insertion_order(self, tmp_path):
        from backend.sessions import Sessions

        session = Sessions(tmp_path / "roots.sqlite").session()
        for mid in ("r1", "r2"):
            session.append_message(
                {"id": mid, "role": "user", "parts": [{"type": "text", "text": mid}]},
                parent_id=None,
            )
        session.append_message({"id": "c", "role": "assistant", "parts": []})
        assert [m["id"] for m in session.get_branches(None)] == ["r1", "r2"]
