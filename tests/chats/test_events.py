"""Directory change events: delivered after commit, so every tab can re-render."""

import pytest

from backend.chats import (
    ChatCreated,
    ChatDeleted,
    ChatRenamed,
    ChatRestored,
    ChatTurnRecorded,
    SharedContextChanged,
)


class TestEvents:
    def test_each_chat_write_emits_its_event_with_the_new_summary(self, chats, events):
        summary = chats.create_chat("a")
        renamed = chats.rename_chat(summary.id, "b")
        turned = chats.record_chat_turn(summary.id, "hi")
        chats.delete_chat(summary.id)
        restored = chats.restore_chat(summary.id)
        assert events == [
            ChatCreated("alice", summary),
            ChatRenamed("alice", renamed),
            ChatTurnRecorded("alice", turned),
            ChatDeleted("alice", summary.id),
            ChatRestored("alice", restored),
        ]
        assert [e.type for e in events] == [
            "created",
            "renamed",
            "turn_recorded",
            "deleted",
            "restored",
        ]
        assert {e.chat_id for e in events} == {summary.id}

    def test_shared_context_writes_emit_the_new_content(self, chats, events):
        chats.set_shared_context("m", "a")
        chats.append_shared_context("m", "b")
        chats.index_shared("notes", "k", "entry")
        assert events == [
            SharedContextChanged("alice", "m", "set", "a"),
            SharedContextChanged("alice", "m", "append", "ab"),
            SharedContextChanged("alice", "notes", "index", "entry", "k"),
        ]
        assert {e.type for e in events} == {"shared_context"}

    def test_no_event_for_a_no_op(self, chats, events):
        summary = chats.create_chat("same")
        chats.rename_chat(summary.id, "same")
        chats.delete_chat(summary.id)
        chats.delete_chat(summary.id)
        assert [e.type for e in events] == ["created", "deleted"]

    def test_events_wait_for_the_outermost_commit(self, chats, events):
        with chats.database.transaction():
            chats.create_chat("a")
            chats.create_chat("b")
            assert events == []
        assert [e.type for e in events] == ["created", "created"]

    def test_a_rolled_back_write_emits_nothing(self, chats, events):
        with pytest.raises(RuntimeError), chats.database.transaction():
            chats.create_chat("a")
            raise RuntimeError("abort")
        assert events == []
        assert chats.list_chats() == []

    def test_a_failing_listener_neither_fails_the_write_nor_starves_others(self, chats):
        seen = []

        def broken(event):
            raise RuntimeError("listener bug")

        chats.subscribe(broken)
        chats.subscribe(seen.append)
        summary = chats.create_chat()
        assert chats.get_summary(summary.id) == summary
        assert len(seen) == 1

    def test_unsubscribe_stops_delivery_and_is_idempotent(self, chats):
        seen = []
        unsubscribe = chats.subscribe(seen.append)
        unsubscribe()
        unsubscribe()
        chats.create_chat()
        assert seen == []

    def test_a_listener_may_read_the_directory(self, chats):
        titles = []
        chats.subscribe(lambda event: titles.append([c.title for c in chats.list_chats()]))
        chats.create_chat("x")
        assert titles == [["x"]]

    def test_a_non_callable_listener_is_refused(self, chats):
        with pytest.raises(TypeError):
            chats.subscribe("not a function")

    def test_events_never_carry_internal_fields(self, chats, events):
        """RFC edge case 20: what is broadcast is the summary, nothing more."""
        chats.create_chat()
        (event,) = events
        assert set(event.chat.model_dump()) == {
            "id",
            "title",
            "created_at",
            "updated_at",
            "last_message_preview",
            "archived_at",
        }
