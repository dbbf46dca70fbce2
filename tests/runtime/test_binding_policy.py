"""Binding policy (seed 004) as properties: whatever the order of saves and re-binds, a pinned
chat runs exactly its recorded version and a ``latest`` chat the newest one."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from backend.agents import AgentLibrary, AgentSpec
from backend.runtime import LibraryAgents
from backend.runtime.bindings import Bindings
from backend.runtime.model_choice import SingleModel
from backend.runtime.records import Conversation, VersionPolicy
from backend.storage import Database
from tests.support.scripted_model import ScriptedModel

# An action: save a new version, or bind the chat (pinned to the newest, or following latest).
Action = tuple[str, VersionPolicy | None]
ACTIONS = st.lists(
    st.sampled_from([("save", None), ("bind", "pinned"), ("bind", "latest")]),
    min_size=1,
    max_size=15,
)


def record(agent_id: str, policy: VersionPolicy, version: int | None) -> Conversation:
    return Conversation(
        id="c1", tenant_id="t", owner_principal_id="u", participant_ids=("u",),
        agent_id=agent_id, agent_version_policy=policy, agent_version=version,
        session_state_version=0, title="", last_run_id=None, archived_at=None,
        created_at=0, updated_at=0,
    )  # fmt: skip


class TestBindingPolicyProperties:
    @settings(max_examples=40, deadline=None)
    @given(ACTIONS)
    def test_pinned_runs_its_version_and_latest_the_newest_whatever_the_order(
        self, tmp_path_factory, actions: list[Action]
    ):
        db = Database(Path(tmp_path_factory.mktemp("bind")) / "directory.sqlite")
        try:
            library = AgentLibrary(db)
            agents = LibraryAgents(library)
            bindings = Bindings(
                None,  # type: ignore[arg-type]  # agent_for reads no directory
                agents,
                SingleModel(ScriptedModel()),
                default_agent_id=None,
                default_version_policy="pinned",
                tenant_id="t",
                owner_principal_id="u",
                clock=lambda: 0,
            )
            agent = library.create(AgentSpec(name="A", instructions="v1"))
            bound = record(agent.agent_id, "pinned", 1)
            newest = 1
            for kind, policy in actions:
                if kind == "save":
                    newest = library.save(agent.agent_id, AgentSpec("A", f"v{newest + 1}")).version
                else:
                    assert policy is not None
                    bound = record(agent.agent_id, policy, newest if policy == "pinned" else None)
                ran = bindings.agent_for(bound)
                expected = bound.agent_version if bound.agent_version_policy == "pinned" else newest
                assert ran.version == expected
                assert ran.system_prompt == f"v{expected}"
        finally:
            db.close()
