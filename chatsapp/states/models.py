"""A chat's model and agent, shown and changed from its header, live in every tab of the user.

The binding (agent, version, model of the next turn, archived) lives in a shared state linked
to the chat (``conv-<chat id>``, like the transcript), so a change made in one tab shows in
every tab that has the chat open. The list of models on offer is the same for every chat of
the server: each tab reads it once when a chat page loads.

A picker option's value is ``"<endpoint>:<model>"`` (an endpoint name never holds ``:``), or
:data:`AUTO_KEY` for "no choice of this chat": its agent's model, else the server's default.
"""

from __future__ import annotations

import dataclasses

import reflex as rx

from backend.endpoints import choice_label
from backend.errors import AgentNotFoundError, ChatsError
from backend.models import ModelRef
from backend.runtime import AgentBinding, ContextMeter, Conversation
from chatsapp.auth.identity import conversation_token, current_user_id
from chatsapp.chat_route import chat_id_of_path
from chatsapp.reflex_seam import link_to
from chatsapp.services import offload, services
from chatsapp.states.chat_access import chat_access
from chatsapp.states.server_only import server_only

AUTO_KEY = "auto"
BUILTIN_AGENT_LABEL = "Default assistant"


@dataclasses.dataclass
class ModelChoiceRow:
    key: str = ""
    label: str = ""
    available: bool = True
    offline: bool = False


def model_key(ref: ModelRef | None) -> str:
    return AUTO_KEY if ref is None else f"{ref.endpoint}:{ref.model}"


def model_ref(key: str) -> ModelRef | None:
    """The model a picker value names; ``None`` for :data:`AUTO_KEY`; ValueError if malformed."""
    if key == AUTO_KEY:
        return None
    endpoint, sep, model = key.partition(":")
    if not sep or not endpoint:
        raise ValueError(f"not a model choice: {key!r}")
    return ModelRef(endpoint, model)


async def model_choices() -> list[ModelChoiceRow]:
    """Every model on offer, as picker rows (listings are cached briefly by the endpoints)."""
    found = await offload(services().endpoints().choices)
    return [ModelChoiceRow(model_key(c.ref), c.label, c.available, c.offline) for c in found]


class SharedChatSettingsState(rx.SharedState):
    """Shared by every tab showing one chat: what its header says about agent and model."""

    chat_id: str = ""
    chosen_key: str = AUTO_KEY
    next_model_label: str = ""
    agent_id: str = ""
    agent_label: str = ""
    agent_version: int = 0
    latest_version: int = 0
    update_available: bool = False
    archived: bool = False
    # The composer's context meter (backend.runtime.meter): the next turn against the window.
    meter_percent: int = 0
    meter_label: str = ""
    compact_marker_percent: int = -1  # where compaction sets in, as % of the window; -1 never
    will_compact: bool = False
    loaded: bool = False

    @server_only
    async def refresh(self, user_id: str) -> None:
        """Re-read the binding and the meter (the bridge calls it after runs and agent saves).

        Only changed fields are assigned: each assignment is a frame to every linked tab.
        """
        header = await services().runtime(user_id).chat_header(self.chat_id)
        binding, record, meter = header.binding, header.conversation, header.meter
        # An agent's name changes only with a new version of it: read it again only then.
        same_agent = (binding.agent_id, binding.latest_version) == (
            self.agent_id,
            self.latest_version,
        )
        label = self.agent_label if same_agent and self.agent_label else ""
        values = header_values(
            binding,
            record,
            meter,
            label or await offload(agent_name, user_id, binding.agent_id),
        )
        for name, value in values.items():
            if getattr(self, name) != value:
                setattr(self, name, value)


def header_values(
    binding: AgentBinding, record: Conversation, meter: ContextMeter, agent_label: str
) -> dict[str, object]:
    """The header's fields, by name, from what the runtime read."""
    return {
        "chosen_key": model_key(binding.chosen_model),
        "next_model_label": choice_label(binding.model),
        "agent_id": binding.agent_id,
        "agent_label": agent_label,
        "agent_version": binding.version,
        "latest_version": binding.latest_version,
        "update_available": binding.update_available,
        "archived": record.archived_at is not None,
        "meter_percent": round(meter.share * 100),
        "meter_label": meter_label(meter.next_turn_tokens, meter.context_tokens),
        "compact_marker_percent": (
            -1 if meter.compact_at_share is None else round(meter.compact_at_share * 100)
        ),
        "will_compact": meter.will_compact,
        "loaded": True,
    }


def meter_label(next_turn_tokens: int, context_tokens: int) -> str:
    """``"~1,234 / 8,000 tokens"``: the next turn's prompt (an estimate) against the window."""
    return f"~{next_turn_tokens:,} / {context_tokens:,} tokens"


def agent_name(user_id: str, agent_id: str) -> str:
    """The newest name of a library agent; the built-in assistant's label otherwise."""
    try:
        return services().agents(user_id).load(agent_id).spec.name
    except AgentNotFoundError:
        return BUILTIN_AGENT_LABEL


class ChatSettingsTabState(rx.State):
    """Per tab: the models on offer, and the last refusal to show near the picker."""

    choices: list[ModelChoiceRow] = []
    error: str = ""

    @rx.event
    async def load(self) -> None:
        """on_load of a chat page: link to the chat's settings and read what is on offer."""
        chat_id = chat_id_of_path(self.router.url.path)
        self.error = ""
        try:  # the person may read the chat before this tab may link to its shared view
            user_id = (await chat_access(chat_id, "read")).owner_id
        except (ChatsError, KeyError, ValueError):
            return  # the page shows "this chat does not exist"
        header = await self.get_state(SharedChatSettingsState)
        linked = await link_to(header, conversation_token(chat_id))
        linked.chat_id = chat_id
        await linked.refresh(user_id)
        self.choices = await model_choices()

    @rx.event
    async def choose_model(self, key: str):  # noqa: ANN201
        """The picker changed: the chat's next turn uses this model (one streaming keeps its)."""
        user_id = current_user_id()
        header = await self.get_state(SharedChatSettingsState)
        try:
            ref = model_ref(key)
            await services().runtime(user_id).set_model(header.chat_id, ref)
        except (ChatsError, ValueError) as exc:
            self.error = str(exc)
            return rx.toast.error(f"Could not switch the model: {exc}")
        self.error = ""
        await header.refresh(user_id)
        return None

    @rx.event
    async def use_latest_agent(self):  # noqa: ANN201
        """The one click of "Agent updated to vN — use it"."""
        user_id = current_user_id()
        header = await self.get_state(SharedChatSettingsState)
        try:
            await services().runtime(user_id).use_latest_agent(header.chat_id)
        except ChatsError as exc:
            return rx.toast.error(f"Could not switch the agent: {exc}")
        await header.refresh(user_id)
        return None

    @rx.event
    async def toggle_archived(self):  # noqa: ANN201
        user_id = current_user_id()
        header = await self.get_state(SharedChatSettingsState)
        try:
            await services().runtime(user_id).set_archived(header.chat_id, not header.archived)
        except ChatsError as exc:
            return rx.toast.error(f"Could not change the archive: {exc}")
        await header.refresh(user_id)
        return rx.toast.success("Chat archived." if header.archived else "Chat unarchived.")
