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
from backend.storage import commit_counters
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


def test_an_idle_poll_reads_the_version_alone(processes):
    """Every watched directory pays this each round: no watermarks while nothing moved."""
    processes.watcher.poll()
    before = processes.here.db.stats.snapshot()
    processes.watcher.poll()
    processes.watcher.poll()
    spent = processes.here.db.stats.snapshot() - before
    assert spent.statements <= 2 and spent.rows_read == 0


def test_a_round_asks_nothing_of_a_directory_whose_counter_has_not_moved(processes, storage):
    """The shared thread reads every watched directory's commit counter at once, then polls
    only those that moved (on SQLite there is no counter: each pays its pragma, as before)."""
    heard: list[object] = []
    watcher = ForeignChangeWatcher(processes.here.db, processes.here, "alice", heard.append)
    watcher._baseline()

    def one_round() -> int:
        before = processes.here.db.stats.snapshot()
        [counter] = commit_counters([processes.here.db])
        watcher.poll_round(counter)
        return (processes.here.db.stats.snapshot() - before).statements

    one_round()  # the first round after the baseline polls
    assert one_round() == (0 if storage != "sqlite" else 1)
    processes.there_writes(lambda s: s.insert("theirs", "Theirs", 1))
    one_round()
    assert [type(e) for e in heard] == [ChatCreated]
    with processes.here.db.transaction():
        processes.here.insert("mine", "Mine", 2)
    one_round()  # its own commit moved the counter: polled, and no event for it
    assert [type(e) for e in heard] == [ChatCreated]
    processes.there_writes(lambda s: s.rename(s.load("mine"), "Renamed there"))
    one_round()
    assert len(heard) == 2 and not isinstance(heard[1], ChatCreated)


def test_a_chat_created_on_another_node_reaches_a_subscriber(tmp_path):
    """Two ``Chats`` on one directory stand for two app nodes (on PostgreSQL they share only
    the database): a chat one creates reaches the other's listeners through the poll thread."""
    import threading

    from backend.chats import Chats
    from tests.support.deadlines import WAIT_S

    arrived = threading.Event()
    seen: list[ChatCreated] = []

    def listener(event) -> None:
        if isinstance(event, ChatCreated) and event.chat.title == "From node B":
            seen.append(event)
            arrived.set()

    with Chats(tmp_path, "alice") as node_a, Chats(tmp_path, "alice") as node_b:
        unsubscribe = node_a.subscribe(listener)
        try:
            node_b.create_chat("From node B")
            assert arrived.wait(timeout=WAIT_S), "node B's chat never reached node A"
        finally:
            unsubscribe()
    assert len(seen) == 1
