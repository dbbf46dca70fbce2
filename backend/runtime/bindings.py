"""The conversation record: which agent (and version) a chat is bound to, and who owns it.

Seed 004: a conversation is bound to an agent; ``pinned`` runs exactly the recorded version
on every resume, ``latest`` the newest at claim time. The record is created on first use with
the runtime's default binding (the user's default agent when the agents come from a library);
an existing record keeps its binding. The record also keeps the chat's chosen model, if any
(see :mod:`backend.runtime.model_choice` for which model a turn uses).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

from backend.models import ModelRef
from backend.runtime.agents import AgentDefinition, AgentSource
from backend.runtime.model_choice import ModelSource, model_for_turn
from backend.runtime.ports import DirectoryPort
from backend.runtime.records import AgentBinding, Conversation, VersionPolicy
from backend.runtime.titles import chat_title
from backend.runtime.working_chats import WorkingChat

logger = logging.getLogger(__name__)


class Bindings:
    """Get-or-create the record of a chat, and resolve the agent a run uses."""

    def __init__(
        self,
        directory: DirectoryPort,
        agents: AgentSource,
        models: ModelSource,
        *,
        default_agent_id: str | None,
        default_version_policy: VersionPolicy,
        tenant_id: str,
        owner_principal_id: str,
        clock: Callable[[], int],
        participants: Callable[[str], Sequence[str]] | None = None,
        owner_context: Callable[[str], bool] | None = None,
    ) -> None:
        self._directory = directory
        self.agents = agents
        self.models = models
        self.default_agent_id = default_agent_id
        self.default_version_policy: VersionPolicy = default_version_policy
        self.tenant_id = tenant_id
        self.owner_principal_id = owner_principal_id
        self._clock = clock
        self._participants = participants
        self._owner_context = owner_context

    def ensure_record(self, conv: WorkingChat) -> Conversation:
        record = conv.store.load_conversation(conv.chat_id)
        if record is not None:
            return record
        default = self.default_record(conv.chat_id)
        return conv.store.ensure_conversation(
            conv.chat_id,
            tenant_id=default.tenant_id,
            owner_principal_id=default.owner_principal_id,
            participant_ids=default.participant_ids,
            agent_id=default.agent_id,
            agent_version_policy=default.agent_version_policy,
            agent_version=default.agent_version,
            title=default.title,
            now=default.created_at,
        )

    def default_record(self, chat_id: str) -> Conversation:
        """The record a chat gets on its first write, not stored: what a never-written chat
        reads as (its file is created on first write, not by looking at it)."""
        agent = self.agents.get(self.default_agent_id or self.agents.default_id())
        pinned = self.default_version_policy == "pinned"
        now = self._clock()
        return Conversation(
            id=chat_id,
            tenant_id=self.tenant_id,
            owner_principal_id=self.owner_principal_id,
            participant_ids=(self.owner_principal_id,),
            agent_id=agent.id,
            agent_version_policy=self.default_version_policy,
            agent_version=agent.version if pinned else None,
            session_state_version=0,
            title=chat_title(self._directory, chat_id, default="") or "",
            last_run_id=None,
            archived_at=None,
            created_at=now,
            updated_at=now,
        )

    def conversation(self, chat_id: str, conv: WorkingChat | None) -> Conversation:
        """The record as handed out (``conv`` is None for a chat never written: it reads as the
        default); its ``archived_at`` is the directory's (the one place), and its
        ``participant_ids`` the sharing membership's, owner first (:meth:`participant_ids`)."""
        record = self.default_record(chat_id) if conv is None else self.ensure_record(conv)
        archived_at = self._directory.get_summary(chat_id).archived_at
        return dataclasses.replace(
            record, archived_at=archived_at, participant_ids=self.participant_ids(chat_id)
        )

    def participant_ids(self, chat_id: str) -> tuple[str, ...]:
        """Who takes part in the chat, owner first: read from the sharing membership on every
        call (a member added or removed elsewhere shows at once), else the owner alone. The
        stored column keeps the owner alone: membership has one home, the sharing store."""
        if self._participants is None:
            return (self.owner_principal_id,)
        members = [m for m in self._participants(chat_id) if m != self.owner_principal_id]
        return (self.owner_principal_id, *members)

    def may_use_owner_context(self, chat_id: str) -> bool:
        """Whether a run of the chat may read the owner's shared memory, write to it, or
        search the owner's other chats (``Sharing.run_may_use_owner_context``: a chat shared
        with nobody may; a shared chat only when its owner switched it on). Asked once per
        run, never cached; a failing answer counts as no (what a shared chat's members read
        must never depend on a store being up)."""
        if self._owner_context is None:
            return True
        try:
            return bool(self._owner_context(chat_id))
        except Exception:
            logger.warning("could not read the owner-context switch of chat %s", chat_id)
            return False

    def agent_for(self, record: Conversation) -> AgentDefinition:
        if record.agent_version_policy == "pinned":
            return self.agents.get(record.agent_id, record.agent_version)
        return self.agents.get(record.agent_id)

    def bind(
        self, conv: WorkingChat, agent: AgentDefinition, policy: VersionPolicy
    ) -> Conversation:
        self.ensure_record(conv)
        version = agent.version if policy == "pinned" else None
        conv.store.update_binding(conv.chat_id, agent.id, policy, version, self._clock())
        return self._reload(conv)

    def model_for(self, record: Conversation, agent: AgentDefinition) -> ModelRef:
        return model_for_turn(record, agent, self.models)

    def set_model(self, conv: WorkingChat, model: ModelRef | None) -> Conversation:
        """Record the chat's model (checked first); the next claimed turn uses it."""
        if model is not None:
            self.models.check_model(model)
        self.ensure_record(conv)
        conv.store.set_model(conv.chat_id, model, self._clock())
        return self._reload(conv)

    def binding_of(self, record: Conversation) -> AgentBinding:
        agent = self.agent_for(record)
        return AgentBinding(
            agent_id=record.agent_id,
            policy=record.agent_version_policy,
            version=agent.version,
            latest_version=self.agents.get(record.agent_id).version,
            model=self.model_for(record, agent),
            chosen_model=record.model,
        )

    def _reload(self, conv: WorkingChat) -> Conversation:
        record = conv.store.load_conversation(conv.chat_id)
        assert record is not None  # ensured above, and records are never deleted
        return record
