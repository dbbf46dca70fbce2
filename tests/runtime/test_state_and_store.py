"""Session state: bounded, versioned, validated; and the runtime tables it lives in."""

import json
import threading

import pytest

from backend.errors import (
    ConflictError,
    InvalidSessionStateError,
    SessionStateTooLargeError,
    StaleVersionError,
)
from backend.models import ToolCall
from backend.runtime import SessionStateStore
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.records import RunStatus
from backend.runtime.state_schema import MAX_DEPTH, check_state
from backend.runtime.tools import BUILTIN_TOOLS, ToolContext, run_tool
from tests.runtime.helpers import enqueue, events_until_done, make_runtime
from tests.support.fake_directory import FakeDirectory
from tests.support.runtime_scopes import file_scope
from tests.support.scripted_model import ScriptedModel
from tests.support.threads import run_at_once

SCHEMA = {
    "type": "object",
    "properties": {
        "step": {"type": "integer", "minimum": 0},
        "todo": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
        "mode": {"enum": ["draft", "final"]},
    },
    "required": ["step"],
    "additionalProperties": False,
}


@pytest.fixture
def states(store):
    return SessionStateStore(store, max_bytes=200, clock=lambda: 5)


@pytest.fixture
def directory(tmp_path):
    """A fake directory, closed after the runtimes a test opened over it (ask for it first)."""
    directory = FakeDirectory(tmp_path)
    yield directory
    directory.close()


class TestValidation:
    def test_a_valid_document_is_encoded_canonically(self):
        assert check_state({"todo": ["a"], "step": 1}, SCHEMA) == '{"step":1,"todo":["a"]}'

    @pytest.mark.parametrize(
        ("document", "fragment"),
        [
            ([], "must be a JSON object"),
            ({"step": "1"}, "$.step: expected integer"),
            ({"step": True}, "$.step: expected integer"),
            ({"step": -1}, "below the minimum"),
            ({}, "missing required key 'step'"),
            ({"step": 1, "extra": 1}, "unexpected key 'extra'"),
            ({"step": 1, "todo": ["x" * 21]}, "longer than 20"),
            ({"step": 1, "todo": ["a", "b", "c", "d"]}, "more than 3 items"),
            ({"step": 1, "mode": "other"}, "must be one of"),
            ({"step": 1, "x": float("nan")}, "not JSON"),
        ],
    )
    def test_invalid_documents_are_rejected_with_a_reason(self, document, fragment):
        with pytest.raises(InvalidSessionStateError, match=fragment.replace("$", r"\$")):
            check_state(document, SCHEMA)

    def test_secret_looking_keys_are_refused_anywhere_in_the_document(self):
        with pytest.raises(InvalidSessionStateError, match="secrets"):
            check_state({"service": {"api_key": "sk-123"}}, None)
        check_state({"keyboard": "qwerty", "tokens_used": 5}, None)  # no false positives

    def test_an_oversize_document_fails_clearly_and_is_never_truncated(self):
        with pytest.raises(SessionStateTooLargeError) as caught:
            check_state({"notes": "x" * 500}, None, max_bytes=100)
        assert caught.value.limit == 100
        assert caught.value.bytes > 500


def _nested(depth: int) -> dict:
    """A document whose innermost value sits ``depth`` levels below the root object."""
    value: object = "bottom"
    for _ in range(depth - 1):
        value = {"deeper": value}
    return {"top": value}


class TestLimitsApplyToEveryWrite:
    """Seed 004's bounds hold for every writer: with or without a schema, however deep."""

    def test_the_nesting_limit_holds_without_a_schema(self):
        check_state(_nested(MAX_DEPTH), None)  # at the limit: fine
        with pytest.raises(InvalidSessionStateError, match=f"deeper than {MAX_DEPTH} levels"):
            check_state(_nested(100), None)

    def test_a_document_nested_past_the_interpreters_recursion_limit_fails_clearly(self, states):
        states.put("c1", expected_version=0, state={"a": 1})
        with pytest.raises(InvalidSessionStateError, match="deeper than"):
            states.put("c1", expected_version=1, state=_nested(1_500))
        assert (states.get("c1").version, states.get("c1").data) == (1, {"a": 1})

    @pytest.mark.anyio
    async def test_the_state_tool_reports_a_too_deep_proposal_to_the_model(self, states):
        handle = states.open("c1", None)

        async def remember(fact: str) -> None:
            raise AssertionError("not called")

        context = ToolContext("c1", handle, remember)
        call = ToolCall("t1", "update_session_state", {"set": {"plan": _nested(1_500)}})
        output, error = await run_tool(dict(BUILTIN_TOOLS), context, call)
        assert output is None
        assert f"deeper than {MAX_DEPTH} levels" in error
        assert not handle.dirty  # nothing staged

    @pytest.mark.anyio
    async def test_a_turn_whose_model_proposes_a_too_deep_state_still_completes(
        self, tmp_path, directory, closing
    ):
        chat_id = directory.create_chat().id
        deep = {"set": {"plan": _nested(1_500)}}
        model = ScriptedModel([ToolCall("t1", "update_session_state", deep)], "Kept it short.")
        runtime = closing(make_runtime(tmp_path, directory, model))
        ticket = await runtime.send_message(chat_id, "plan everything")
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert events[-1].type == "run.completed"
        tool_end = [e for e in events if e.type == "tool.call"][-1]
        assert tool_end.data["state"] == "output-error"
        assert "deeper than" in tool_end.data["errorText"]
        assert (await runtime.get_session_state(chat_id)).version == 0
        reply = directory.get_chat(chat_id).session.get_message(ticket.assistant_message_id)
        assert reply["metadata"]["status"] == "completed"
        assert reply["parts"][0]["state"] == "output-error"


class TestSessionStateStore:
    def test_a_new_conversation_starts_empty_at_version_zero(self, states):
        state = states.get("c1")
        assert (state.version, state.data) == (0, {})

    def test_each_write_bumps_the_version_and_the_conversation_record(self, states, store):
        first = states.put("c1", expected_version=0, state={"a": 1})
        second = states.put("c1", expected_version=1, state={"a": 2})
        assert (first.version, second.version) == (1, 2)
        assert states.get("c1").data == {"a": 2}
        assert store.load_conversation("c1").session_state_version == 2

    def test_a_stale_expected_version_is_rejected_and_nothing_changes(self, states):
        states.put("c1", expected_version=0, state={"a": 1})
        with pytest.raises(StaleVersionError) as caught:
            states.put("c1", expected_version=0, state={"b": 2})
        assert (caught.value.expected_version, caught.value.actual_version) == (0, 1)
        assert states.get("c1").data == {"a": 1}

    def test_an_oversize_write_fails_and_leaves_the_old_state(self, states):
        states.put("c1", expected_version=0, state={"a": 1})
        with pytest.raises(SessionStateTooLargeError):
            states.put("c1", expected_version=1, state={"a": "y" * 1000})
        assert states.get("c1").data == {"a": 1}
        assert states.get("c1").version == 1

    def test_two_connections_racing_on_one_version_give_exactly_one_winner(
        self, tmp_path, storage, store
    ):
        barrier = threading.Barrier(2)
        outcomes = []

        def writer(value):
            with file_scope(storage, tmp_path / "chat.sqlite") as db:
                mine = SessionStateStore(runtime_store_for(db), clock=lambda: 1)
                barrier.wait()
                try:
                    mine.put("c1", expected_version=0, state={"writer": value})
                    outcomes.append(("ok", value))
                except StaleVersionError:
                    outcomes.append(("stale", value))

        run_at_once(writer, ("a", "b"))
        assert sorted(kind for kind, _ in outcomes) == ["ok", "stale"]
        winner = next(value for kind, value in outcomes if kind == "ok")
        assert SessionStateStore(store, clock=lambda: 1).get("c1").data == {"writer": winner}


class TestHandle:
    def test_proposals_are_validated_at_once_and_staged_until_commit(self, states):
        handle = states.open("c1", SCHEMA)
        with pytest.raises(InvalidSessionStateError):
            handle.propose(set_values={"step": "not a number"})
        assert not handle.dirty
        handle.propose(set_values={"step": 1})
        assert states.get("c1").version == 0  # nothing written yet
        committed = handle.commit()
        assert committed.version == 1
        assert states.get("c1").data == {"step": 1}

    def test_a_handle_commits_at_the_version_it_read(self, states):
        handle = states.open("c1", None)
        states.put("c1", expected_version=0, state={"other": "writer"})
        handle.propose(set_values={"mine": 1})
        with pytest.raises(StaleVersionError):
            handle.commit()
        assert states.get("c1").data == {"other": "writer"}


class TestRuns:
    def enqueue(self, store, run_id, now):
        return enqueue(store, run_id, now)

    def test_runs_are_claimed_in_enqueue_order(self, store):
        for index, run_id in enumerate(["r1", "r2", "r3"]):
            self.enqueue(store, run_id, now=10 + index)
        claimed = []
        while run := store.claim_next_run("c1", agent_id="assistant", agent_version=1, now=50):
            claimed.append(run.id)
            store.finish_run(run.id, RunStatus.COMPLETED, now=60)
        assert claimed == ["r1", "r2", "r3"]

    def test_the_database_refuses_a_second_running_run(self, store):
        self.enqueue(store, "r1", now=1)
        self.enqueue(store, "r2", now=2)
        store.claim_next_run("c1", agent_id="assistant", agent_version=1, now=3)
        with pytest.raises(ConflictError):
            store.claim_next_run("c1", agent_id="assistant", agent_version=1, now=4)
        assert [r.status for r in store.open_runs("c1")] == [RunStatus.RUNNING, RunStatus.QUEUED]

    def test_a_finished_run_cannot_be_finished_again(self, store):
        self.enqueue(store, "r1", now=1)
        assert store.finish_run("r1", RunStatus.CANCELLED, now=2)
        assert not store.finish_run("r1", RunStatus.COMPLETED, now=3)
        assert store.load_run("r1").status == RunStatus.CANCELLED

    def test_the_conversation_record_keeps_every_field_of_the_seed(self, store):
        record = store.load_conversation("c1")
        assert record.tenant_id == "t"
        assert record.owner_principal_id == "u"
        assert record.participant_ids == ("u",)
        assert (record.agent_id, record.agent_version_policy, record.agent_version) == (
            "assistant",
            "pinned",
            1,
        )
        assert record.session_state_version == 0
        assert (record.title, record.last_run_id, record.archived_at) == ("", None, None)
        assert record.created_at == record.updated_at == 1

    def test_ensure_keeps_an_existing_binding(self, store):
        store.update_binding("c1", "assistant", "latest", None, now=2)
        again = store.ensure_conversation(
            "c1",
            tenant_id="t",
            owner_principal_id="u",
            participant_ids=("u",),
            agent_id="other",
            agent_version_policy="pinned",
            agent_version=7,
            title="",
            now=3,
        )
        assert (again.agent_id, again.agent_version_policy) == ("assistant", "latest")

    @pytest.mark.sqlite_only
    def test_runtime_tables_are_a_named_migration_of_the_chat_file(self, store):
        names = [
            r["name"]
            for r in store.db.query("SELECT name FROM _migrations WHERE component = 'runtime'")
        ]
        assert names == [
            "_m001_runtime_tables",
            "_m002_run_claimant",
            "_m003_fencing",
            "_m004_models",
            "_m005_requester",
        ]
        assert json.loads(
            store.db.query_one("SELECT participant_ids FROM runtime_conversation")[0]
        ) == ["u"]
