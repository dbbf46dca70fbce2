"""A write on a chat that is no longer current fails loudly (issue 10, item 4).

A ``Chat`` held by one process (or one ``Chats`` instance) used to keep acknowledging appends
after another one deleted and purged the chat: they went into the unlinked file and vanished.
Now such a write raises ``ChatNotFoundError`` (a ``KeyError``), the error the UI already
treats as "this chat is gone"; a soft-deleted chat still takes writes until it is purged
(RFC edge case 3: a streaming reply finishes).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from backend.chats import Chats
from backend.errors import ChatNotFoundError
from tests.chats.conftest import text_message
from tests.conftest import ROOT


def chats_file(root, chat):
    return root / "alice" / "chats" / f"{chat.id}.g{chat.generation}.sqlite"


@pytest.fixture
def purger(tmp_path):
    """A second directory instance on the same files (another tab's worker), window 0."""
    directory = Chats(tmp_path, "alice", soft_delete_window_s=0)
    yield directory
    directory.close()


@pytest.fixture
def held(chats):
    """A chat with one message, its ``Chat`` and ``Session`` held by the first instance."""
    chat = chats.get_chat(chats.create_chat("held").id)
    session = chat.session
    assert session.append_message(text_message("m1", "before")).inserted
    return chat, session


class TestWritesAfterAPurgeElsewhere:
    def test_an_append_through_the_held_chat_raises_chat_not_found(self, held, purger):
        chat, _ = held
        purger.delete_chat(chat.id)  # window 0: the delete's own sweep purges it
        assert not purger.layout.chat_path(chat.id, chat.generation).exists()
        with pytest.raises(ChatNotFoundError) as raised:
            chat.session.append_message(text_message("m2", "after"))
        assert isinstance(raised.value, KeyError)
        assert raised.value.chat_id == chat.id

    def test_every_later_write_through_a_held_session_raises_too(self, held, purger):
        chat, session = held
        purger.delete_chat(chat.id)
        purger.sweep()
        for write in (
            lambda: session.append_message(text_message("m2", "after")),
            lambda: session.update_message(text_message("m1", "changed")),
            lambda: session.delete_messages(["m1"]),
            lambda: session.append_message(text_message("m3", "again")),
        ):
            with pytest.raises(ChatNotFoundError):
                write()

    def test_a_purge_by_another_process_is_detected(self, held, tmp_path):
        chat, session = held
        script = textwrap.dedent(
            f"""
            from backend.chats import Chats
            with Chats({str(tmp_path)!r}, "alice", soft_delete_window_s=0) as chats:
                chats.delete_chat({chat.id!r})
                chats.sweep()
            """
        )
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True)
        assert not chats_file(tmp_path, chat).exists()
        with pytest.raises(ChatNotFoundError):
            session.append_message(text_message("m2", "after"))

    def test_a_recreated_id_refuses_writes_through_the_old_generation(self, held, purger):
        chat, session = held
        purger.delete_chat(chat.id)
        purger.create_chat("new life", chat_id=chat.id)
        with pytest.raises(ChatNotFoundError):
            session.append_message(text_message("m2", "after"))
        fresh = purger.get_chat(chat.id)
        assert fresh.session.append_message(text_message("m2", "after")).inserted

    def test_a_soft_deleted_chat_still_takes_writes_until_it_is_purged(self, held, tmp_path):
        chat, session = held
        with Chats(tmp_path, "alice", soft_delete_window_s=3600) as other:
            other.delete_chat(chat.id)
            assert other.sweep() == []
        assert session.append_message(text_message("m2", "streamed on")).inserted


class TestWritesAfterAPurgeInTheSameInstance:
    def test_a_held_session_raises_chat_not_found_after_the_sweep(self, chats, held, clock):
        chat, session = held
        chats.delete_chat(chat.id)
        clock.advance(3_600_001)
        assert chats.sweep() == [chat.id]
        with pytest.raises(ChatNotFoundError):
            session.append_message(text_message("m2", "after"))
        with pytest.raises(ChatNotFoundError):
            chat.session.append_message(text_message("m2", "after"))
