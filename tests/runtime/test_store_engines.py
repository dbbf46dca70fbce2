"""The runtime store on both engines: each chat's scope is a namespace of its own.

On SQLite each chat's runtime tables live in its own file; on PostgreSQL every chat's rows
share one set of tables, keyed by the chat's scope (``backend.runtime.pg_store``). Two chats
holding the same conversation and run ids must still share nothing, whatever the engine.
"""

from __future__ import annotations

import re

import pytest

from backend.config import parse_storage
from backend.errors import LeaseLostError
from backend.runtime.pg_store import PgRuntimeStore, runtime_store_for
from backend.runtime.records import RunStatus
from backend.runtime.store import RuntimeStore
from backend.sessions import Sessions
from tests.runtime.conftest import recorded_conversation
from tests.runtime.helpers import enqueue
from tests.support.runtime_scopes import file_scope

# Up to a statement's first placeholder: the scope's column leads an INSERT, or the first
# parameter is compared with the scope, or it is the scope of the one-row CTE.
_SCOPE_FIRST = re.compile(r"^INSERT INTO \w+ \( ?scope,|scope = \?$|^WITH k AS \(SELECT \?$")


@pytest.fixture
def other(tmp_path, storage, store):
    """A second chat's scope (``other.sqlite``) holding the same conversation id ``c1``."""
    with file_scope(storage, tmp_path / "other.sqlite") as db:
        yield recorded_conversation(runtime_store_for(db))


def _claim(store: RuntimeStore, fence: int | None, now: int = 2):
    return store.claim_next_run("c1", agent_id="assistant", agent_version=1, now=now, fence=fence)


class TestTwoChatsShareNothing:
    def test_records_state_and_fences_of_one_chat_leave_the_other_as_it_was(self, store, other):
        store.update_binding("c1", "writer", "latest", None, now=2)
        store.set_title("c1", "mine", now=2)
        store.put_state("c1", 0, '{"a":1}', now=2)
        enqueue(store, "r1")
        store.set_last_run("c1", "r1", now=3)
        _claim(store, 9)

        untouched = other.load_conversation("c1")
        assert (untouched.agent_id, untouched.title, untouched.last_run_id) == (
            "assistant",
            "",
            None,
        )
        assert (other.load_state("c1").version, other.fence_of("c1")) == (0, 0)
        assert other.open_runs("c1") == []
        assert other.count_runs("c1", RunStatus.RUNNING) == 0

    def test_each_chat_queues_claims_and_ends_runs_of_the_same_ids_on_its_own(self, store, other):
        enqueue(store, "r1")
        enqueue(other, "r1")
        mine, theirs = _claim(store, 5), _claim(other, 2)  # both running at once: two chats
        assert (store.fence_of("c1"), other.fence_of("c1")) == (5, 2)
        assert store.finish_run("r1", RunStatus.COMPLETED, now=3)
        assert other.load_run("r1").status == RunStatus.RUNNING
        other.check_fence(theirs)  # still its chat's newest claim
        with pytest.raises(LeaseLostError):
            store.check_fence(mine)  # ended in its own chat

    def test_a_run_queued_in_one_chat_is_claimed_only_there(self, store, other):
        enqueue(store, "r1")
        assert _claim(other, None) is None
        assert _claim(store, None).id == "r1"


class TestImportingARecord:
    def test_an_import_replaces_the_record_whole_on_both_engines(self, store):
        """As SQLite's INSERT OR REPLACE: the exported record as is, the fence back to 0."""
        enqueue(store, "r1")
        _claim(store, 7)
        exported = store.load_conversation("c1")
        store.set_title("c1", "changed after the export", now=9)
        store.import_record(exported, '{"restored":true}', state_updated_at=4)
        assert store.load_conversation("c1") == exported
        assert store.fence_of("c1") == 0
        state = store.load_state("c1")
        assert (state.data, state.updated_at) == ({"restored": True}, 4)


def test_the_twin_rewrites_every_statement_with_the_scope_first() -> None:
    """A statement the twin forgot would run SQLite's unkeyed SQL over every chat's rows."""
    statements = {name for name in vars(RuntimeStore) if name.isupper()}
    rewritten = {name for name in vars(PgRuntimeStore) if name.isupper()}
    assert statements - rewritten == {"SELECT_FENCE"}  # check_fence is an UPDATE there
    assert rewritten - statements == {"FENCED_COMMIT"}
    for name in rewritten:
        sql = " ".join(getattr(PgRuntimeStore, name).split())
        assert _SCOPE_FIRST.search(sql[: sql.index("?") + 1]), name


def test_a_store_refuses_the_other_engines_scope(tmp_path, storage) -> None:
    """SQLite's migrations must never run on PostgreSQL (nor the twin's on a file)."""
    wrong = RuntimeStore if storage != "sqlite" else PgRuntimeStore
    with (
        file_scope(storage, tmp_path / "chat.sqlite") as db,
        pytest.raises(TypeError, match="runtime_store_for"),
    ):
        wrong(db)


def test_a_purged_conversation_takes_its_runtime_rows_along(tmp_path, postgres_url, monkeypatch):
    """``Sessions.drop_conversation_rows`` (a chat's purge on PostgreSQL) deletes the runtime's
    runs, session state and record of that chat's scope in its commit, and nobody else's."""
    monkeypatch.setenv("CHATS_STORAGE", postgres_url)
    storage = parse_storage(postgres_url)
    purged, kept = tmp_path / "purged.sqlite", tmp_path / "kept.sqlite"
    for path in (purged, kept):
        with Sessions(path) as sessions:
            sessions.session("c1").append_message(
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
            )
        with file_scope(storage, path) as db:
            store = recorded_conversation(runtime_store_for(db))
            enqueue(store, "r1")
            store.put_state("c1", 0, '{"note": "kept"}', now=3)
    assert Sessions.drop_conversation_rows(purged)
    with file_scope(storage, purged) as db:
        store = runtime_store_for(db)
        assert store.load_conversation("c1") is None
        assert store.count_runs("c1", RunStatus.QUEUED) == 0
        assert store.load_state("c1").version == 0
    with file_scope(storage, kept) as db:
        store = runtime_store_for(db)
        assert store.load_conversation("c1") is not None
        assert store.count_runs("c1", RunStatus.QUEUED) == 1
        assert store.load_state("c1").data == {"note": "kept"}
