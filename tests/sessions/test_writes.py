"""Writes: append, update, upsert, import, delete (with splice) and clear."""

from __future__ import annotations

import math

import pytest

from backend.errors import InvalidInputError
from backend.sessions import OMITTED, AppendResult, Sessions
from tests.sessions.conftest import append_chain, ids, text_message


@pytest.fixture
def session_reserving_channel(db_path):
    """A session of a store that reserves the metadata key ``channel`` for the server."""
    with Sessions(db_path, reserved_metadata_keys=("channel",)) as store:
        yield store.session()


class TestAppend:
    def test_appends_a_chain_follows_the_latest_leaf_and_round_trips_content(self, session):
        messages = [text_message(f"m{i}", f"hello {i}") for i in (1, 2, 3)]
        for message in messages:
            assert session.append_message(message) == AppendResult(True, message)
        assert session.get_history() == messages
        assert session.get_latest_leaf() == messages[-1]
        assert [stat.id for stat in session.get_history_row_stats()] == ["m1", "m2", "m3"]
        assert list(session.history()) == messages

    def test_an_omitted_parent_attaches_to_the_active_leaf(self, session):
        append_chain(session, "a", "b")
        session.append_message(text_message("c"), parent_id=OMITTED)
        assert ids(session.get_history()) == ["a", "b", "c"]

    def test_a_none_parent_makes_a_new_root(self, session):
        append_chain(session, "a", "b")
        session.append_message(text_message("r"), parent_id=None)
        assert ids(session.get_history()) == ["r"]
        assert ids(session.get_history(leaf_id="b")) == ["a", "b"]

    def test_an_empty_string_parent_makes_a_new_root(self, session):
        append_chain(session, "a")
        session.append_message(text_message("r"), parent_id="")
        assert ids(session.get_history()) == ["r"]

    def test_an_unknown_parent_falls_back_to_a_root(self, session):
        append_chain(session, "r1", "r2")
        session.append_message(text_message("r3"), parent_id="not-a-real-id")
        assert ids(session.get_history()) == ["r3"]

    def test_a_parent_from_another_session_is_unknown_here(self, sessions):
        sessions.session("a").append_message(text_message("x"))
        other = sessions.session("b")
        other.append_message(text_message("y"), parent_id="x")
        assert ids(other.get_history()) == ["y"]

    def test_is_idempotent_on_ids_and_returns_the_message_already_stored(self, session, db_path):
        first = text_message("m1", "first")
        session.append_message(first)
        result = session.append_message(text_message("m1", "second"))
        assert result == AppendResult(False, first)
        assert session.get_history() == [first]

    def test_the_most_recent_append_is_the_active_leaf_even_for_a_branch_append(self, session):
        append_chain(session, "a", "b", "c")
        session.append_message(text_message("b2"), parent_id="a")
        assert session.get_latest_leaf()["id"] == "b2"
        assert ids(session.get_history()) == ["a", "b2"]

    def test_refuses_an_echoed_compaction_overlay_without_writing_or_emitting(
        self, session, events
    ):
        append_chain(session, "m1")
        overlay = text_message("compaction_abc", "summary", role="assistant")
        assert session.append_message(overlay) == AppendResult(False, overlay)
        assert session.upsert_message(overlay) == AppendResult(False, overlay)
        assert session.update_message(overlay) is None
        assert session.get_message("compaction_abc") is None
        assert [e.type for e in events] == ["append"]
        session.append_message(text_message("m2"))
        assert ids(session.get_history()) == ["m1", "m2"]

    def test_stamps_integer_millisecond_timestamps(self, session):
        session.append_message(text_message("m1"))
        (stat,) = session.get_history_row_stats()
        assert isinstance(stat.created_at, int)
        assert stat.created_at > 1_600_000_000_000  # milliseconds, not seconds

    def test_a_read_returns_exactly_the_object_written(self, session):
        message = {
            "id": "m1",
            "role": "assistant",
            "parts": [
                {"type": "text", "text": 'ünïcödé ✓ 🎉 \u0000 "quoted" \\ back'},
                {"type": "tool-weather", "toolCallId": "c1", "input": {"city": "Oslo"}},
                {"type": "data-x", "data": [1, 2.5, None, True, {"nested": []}]},
            ],
            "metadata": {"model": "m", "n": 3},
        }
        session.append_message(message)
        assert session.get_message("m1") == message
        assert session.get_history() == [message]

    def test_a_lone_surrogate_round_trips(self, session):
        message = text_message("m1", "broken \ud800 pair")
        session.append_message(message)
        assert session.get_message("m1") == message


class TestInputValidation:
    def test_non_json_serialisable_input_raises_type_error_and_writes_nothing(self, session):
        with pytest.raises(TypeError):
            session.append_message(
                {"id": "m1", "role": "user", "parts": [{"type": "text", "text": object()}]}
            )
        with pytest.raises(TypeError):
            session.append_message(
                {"id": "m2", "role": "user", "parts": [{"type": "x", "value": math.nan}]}
            )
        assert session.get_history() == []

    def test_a_circular_message_raises_type_error(self, session):
        part: dict = {"type": "x"}
        part["self"] = part
        with pytest.raises(TypeError):
            session.append_message({"id": "m1", "role": "user", "parts": [part]})

    def test_a_message_must_be_a_dict(self, session):
        with pytest.raises(TypeError):
            session.append_message(["not", "a", "dict"])

    @pytest.mark.parametrize(
        "message",
        [
            {"role": "user", "parts": []},
            {"id": "", "role": "user", "parts": []},
            {"id": 3, "role": "user", "parts": []},
            {"id": "m", "parts": []},
            {"id": "m", "role": "user"},
            {"id": "m", "role": "user", "parts": "text"},
        ],
    )
    def test_a_message_without_the_uimessage_shape_is_rejected(self, session, message):
        with pytest.raises(InvalidInputError):
            session.append_message(message)

    def test_an_id_that_is_not_valid_unicode_is_rejected(self, sessions, session):
        with pytest.raises(InvalidInputError):
            session.append_message(text_message("bad\ud800id"))
        with pytest.raises(InvalidInputError):
            sessions.session("bad\udfffsession")

    def test_an_unknown_source_is_rejected(self, session):
        with pytest.raises(ValueError):
            session.append_message(text_message("m"), source="browser")


class TestUpdate:
    def test_updates_a_message_in_place_and_returns_it(self, session):
        append_chain(session, "m1", "m2")
        edited = text_message("m1", "edited")
        assert session.update_message(edited) == edited
        assert session.get_history()[0] == edited
        assert ids(session.get_history()) == ["m1", "m2"]

    def test_returns_none_for_an_unknown_id_and_writes_nothing(self, session, events):
        assert session.update_message(text_message("ghost")) is None
        assert session.get_message("ghost") is None
        assert events == []

    def test_an_update_that_changes_nothing_emits_no_event(self, session, events):
        message = text_message("m1", "same")
        session.append_message(message)
        assert session.update_message(dict(message)) == message
        assert [e.type for e in events] == ["append"]

    def test_can_change_the_role(self, session):
        append_chain(session, "m1")
        session.update_message(text_message("m1", "now assistant", role="assistant"))
        assert session.get_message("m1")["role"] == "assistant"


class TestUpsert:
    def test_appends_a_new_id(self, session):
        append_chain(session, "a")
        message = text_message("b")
        assert session.upsert_message(message) == AppendResult(True, message)
        assert ids(session.get_history()) == ["a", "b"]

    def test_updates_an_existing_id_and_ignores_the_parent(self, session):
        append_chain(session, "a", "b")
        edited = text_message("b", "edited")
        assert session.upsert_message(edited, parent_id=None) == AppendResult(False, edited)
        assert session.get_history() == [text_message("a"), edited]


class TestImport:
    def test_writes_verbatim_with_explicit_parent_and_timestamp(self, session, events):
        session.import_message(text_message("i1"), parent_id=None, created_at=1_000)
        session.import_message(text_message("i2"), parent_id="i1", created_at=2_000)
        assert ids(session.get_history()) == ["i1", "i2"]
        stats = session.get_history_row_stats()
        assert [(s.id, s.created_at) for s in stats] == [("i1", 1_000), ("i2", 2_000)]
        assert [e.type for e in events] == ["import", "import"]
        assert events[1].parent_id == "i1"

    def test_is_idempotent_and_emits_only_for_new_rows(self, session, events):
        session.import_message(text_message("i1"), parent_id=None, created_at=1)
        session.import_message(text_message("i1", "other"), parent_id=None, created_at=2)
        assert session.get_message("i1") == text_message("i1")
        assert [e.type for e in events] == ["import"]

    def test_does_not_sanitise_strip_or_refuse_overlay_ids(self, session_reserving_channel):
        session = session_reserving_channel
        message = {
            **text_message("compaction_x", "summary from elsewhere"),
            "metadata": {"channel": "web"},
        }
        session.import_message(message, parent_id=None, created_at=5)
        assert session.get_message("compaction_x") == message

    def test_an_imported_row_becomes_the_active_leaf(self, session):
        append_chain(session, "a", "b")
        session.import_message(text_message("i"), parent_id="a", created_at=1)
        assert session.get_latest_leaf()["id"] == "i"


class TestDelete:
    def test_splices_children_to_the_grandparent_on_a_mid_chain_delete(self, session):
        append_chain(session, "s1", "s2", "s3")
        session.delete_messages(["s2"])
        assert ids(session.get_history()) == ["s1", "s3"]

    def test_deleting_the_leaf_makes_its_parent_the_leaf(self, session):
        append_chain(session, "s1", "s2")
        session.delete_messages(["s2"])
        assert session.get_latest_leaf()["id"] == "s1"
        assert ids(session.get_history()) == ["s1"]

    def test_bulk_deletes_a_span_and_rewires_both_surviving_branches(self, session):
        append_chain(session, "a", "b", "c", "left")
        session.append_message(text_message("right"), parent_id="c")
        session.delete_messages(["b", "c"])
        assert ids(session.get_history(leaf_id="left")) == ["a", "left"]
        assert ids(session.get_history(leaf_id="right")) == ["a", "right"]
        assert ids(session.get_branches("a")) == ["left", "right"]

    def test_deleting_root_and_leaf_leaves_the_other_branch_as_a_root(self, session):
        append_chain(session, "root", "left")
        session.append_message(text_message("right"), parent_id="root")
        session.delete_messages(["root", "right"])
        assert ids(session.get_history()) == ["left"]

    def test_deletes_are_scoped_to_their_session(self, sessions):
        a, b = sessions.session("a"), sessions.session("b")
        a.append_message(text_message("same", "in a"))
        b.append_message(text_message("same", "in b"))
        a.delete_messages(["same"])
        assert a.get_history() == []
        assert b.get_history() == [text_message("same", "in b")]

    def test_the_event_lists_the_ids_as_passed_even_unknown_ones(self, session, events):
        append_chain(session, "a")
        session.delete_messages(["a", "ghost", "a"])
        assert events[-1].type == "delete"
        assert events[-1].message_ids == ("a", "ghost")

    def test_a_single_string_is_refused_rather_than_read_as_characters(self, session):
        with pytest.raises(TypeError):
            session.delete_messages("abc")

    def test_compaction_records_survive_a_delete(self, session):
        append_chain(session, "a", "b", "c")
        session.add_compaction("sum", "a", "b")
        session.delete_messages(["c"])
        assert len(session.get_compactions()) == 1


class TestClear:
    def test_clears_messages_and_compactions(self, session, events):
        append_chain(session, "a", "b")
        session.add_compaction("summary", "a", "b")
        session.clear_messages()
        assert session.get_history() == []
        assert session.get_compactions() == []
        assert session.get_latest_leaf() is None
        assert events[-1].type == "clear"

    def test_a_cleared_session_starts_again_from_a_root(self, session):
        append_chain(session, "a", "b")
        session.clear_messages()
        append_chain(session, "c", "d")
        assert ids(session.get_history()) == ["c", "d"]

    def test_clear_leaves_other_sessions_alone(self, sessions):
        sessions.session("a").append_message(text_message("x"))
        sessions.session("b").append_message(text_message("y"))
        sessions.session("a").clear_messages()
        assert ids(sessions.session("b").get_history()) == ["y"]


class TestSanitisation:
    def test_strips_reserved_metadata_only_from_client_writes(self, session_reserving_channel):
        session = session_reserving_channel
        meta = {"channel": "web", "other": 1}
        client = session.append_message(
            {**text_message("c"), "metadata": dict(meta)}, source="client"
        )
        server = session.append_message({**text_message("s"), "metadata": dict(meta)})
        assert client.message["metadata"] == {"other": 1}
        assert session.get_message("c")["metadata"] == {"other": 1}
        assert session.get_message("s")["metadata"] == meta
        assert server.inserted

    def test_drops_metadata_that_only_held_reserved_keys(self, session_reserving_channel):
        session = session_reserving_channel
        session.append_message({**text_message("c"), "metadata": {"channel": 1}}, source="client")
        assert "metadata" not in session.get_message("c")

    def test_removes_openai_ephemeral_fields_and_empty_reasoning(self, session):
        message = {
            "id": "m",
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "  "},
                {
                    "type": "reasoning",
                    "text": "",
                    "providerMetadata": {"openai": {"itemId": "x"}},
                },
                {
                    "type": "text",
                    "text": "answer",
                    "providerMetadata": {"openai": {"itemId": "i", "keep": 1}, "other": {}},
                    "callProviderMetadata": {"openai": {"reasoningEncryptedContent": "e"}},
                },
                {"type": "reasoning", "text": "", "providerMetadata": {"anthropic": {"s": 1}}},
            ],
        }
        stored = session.append_message(message).message
        assert stored["parts"] == [
            {
                "type": "text",
                "text": "answer",
                "providerMetadata": {"openai": {"keep": 1}, "other": {}},
            },
            {"type": "reasoning", "text": "", "providerMetadata": {"anthropic": {"s": 1}}},
        ]
        assert session.get_message("m") == stored
        assert message["parts"][2]["providerMetadata"]["openai"]["itemId"] == "i"  # not mutated


class TestHandles:
    def test_handles_are_cached_per_session_id(self, sessions):
        assert sessions.session() is sessions.session("")
        assert sessions.session("a") is sessions.session("a")
        assert sessions.session("a") is not sessions.session("b")

    def test_ids_may_repeat_across_sessions_of_one_file(self, sessions):
        a, b = sessions.session("a"), sessions.session("b")
        a.append_message(text_message("m", "a"))
        b.append_message(text_message("m", "b"))
        a.update_message(text_message("m", "a2"))
        assert a.get_message("m") == text_message("m", "a2")
        assert b.get_message("m") == text_message("m", "b")

    def test_messages_persist_across_reopening_the_file(self, db_path):
        with Sessions(db_path) as first:
            append_chain(first.session(), "a", "b")
        with Sessions(db_path) as second:
            assert ids(second.session().get_history()) == ["a", "b"]
            second.session().append_message(text_message("c"))
            assert ids(second.session().get_history()) == ["a", "b", "c"]
