"""Another process's (or machine's) commits to a directory become events, on both engines.

Two handles on one directory stand for two processes: on SQLite two connections to the same
``directory.sqlite``, on PostgreSQL two scopes of the same name (as two machines open it).
The watcher's version poll is ``data_version()`` of its own handle; each test calls ``poll``
itself, so no timing is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from backend.chats.chat_records import ChatRecordStore
from backend.chats.directory_storage import record_store_for
from backend.chats.events import ChatCreated, ChatDeleted, ChatTurnRecorded, DirectoryChanged
from backend.chats.watch import MAX_EVENTS_PER_KIND, ForeignChangeWatcher
from tests.support.storage_engines import directory_scope


class TwoProcesses:
    def __init__(self, stack: ExitStack, storage, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.here: ChatRecordStore = record_store_for(
            stack.enter_context(directory_scope(storage, folder))
        )
        self.there: ChatRecordStore = record_store_for(
            stack.enter_context(directory_scope(storage, folder))
        )
        self.watcher = ForeignChangeWatcher(self.here.db, self.here, "alice", lambda _: None)
        self.watcher._baseline()

    def there_writes(self, write) -> None:
        with self.there.db.transaction():
            write(self.there)


@pytest.fixture
def processes(storage, tmp_path) -> Iterator[TwoProcesses]:
    with ExitStack() as stack:
        yield TwoProcesses(stack, storage, tmp_path / "alice")


def test_nothing_committed_elsewhere_means_no_event(processes):
    assert processes.watcher.poll() == []


def test_own_commits_move_the_marks_without_events(processes):
    with processes.here.db.transaction():
        processes.here.insert("mine", "Mine", 1)
    assert processes.watcher.poll() == []
    processes.there_writes(lambda s: s.record_turn(s.load("mine"), "hi", 5))
    events = processes.watcher.poll()
    assert [type(e) for e in events] == [ChatTurnRecorded]  # not announced as created


def test_a_chat_created_elsewhere_is_announced_once(processes):
    processes.there_writes(lambda s: s.insert("theirs", "Theirs", 1))
    events = processes.watcher.poll()
    assert len(events) == 1 and isinstance(events[0], ChatCreated)
    assert events[0].chat.title == "Theirs"
    assert processes.watcher.poll() == []


def test_turns_and_deletes_elsewhere_become_their_events(processes):
    processes.there_writes(lambda s: (s.insert("a", "A", 1), s.insert("b", "B", 1)))
    processes.watcher.poll()
    processes.there_writes(lambda s: s.record_turn(s.load("a"), "hello", 2))
    processes.there_writes(lambda s: s.soft_delete(s.load("b"), 3))
    events = processes.watcher.poll()
    assert {type(e) for e in events} == {ChatTurnRecorded, ChatDeleted}


def test_a_change_the_marks_cannot_name_is_one_changed_event(processes):
    processes.there_writes(lambda s: s.insert("a", "A", 1))
    processes.watcher.poll()
    processes.there_writes(lambda s: s.rename(s.load("a"), "Renamed"))
    assert processes.watcher.poll() == [DirectoryChanged("alice")]


def test_too_many_rows_of_one_kind_say_reload(processes):
    def many(store: ChatRecordStore) -> None:
        for n in range(MAX_EVENTS_PER_KIND):
            store.insert(f"c{n}", "T", 1)

    processes.there_writes(many)
    assert processes.watcher.poll() == [DirectoryChanged("alice")]
