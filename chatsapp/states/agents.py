"""The agents page: a person's agent library, one form to create or edit, version history.

Every save is a new immutable version (``backend.agents``). The form is saved at the version
it was opened on (``expected_version``): a save from a stale form is refused, not stacked.
A refusal (too long, out of range, unknown model) is shown on the form; nothing is saved.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import reflex as rx

from backend.agents import (
    KNOWN_TOOLS,
    MAX_INSTRUCTIONS_CHARS,
    MAX_OUTPUT_TOKENS,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    AgentSpec,
)
from backend.errors import ChatsError
from chatsapp.auth.identity import current_user_id
from chatsapp.services import offload, services
from chatsapp.states.directory import open_new_chat_with
from chatsapp.states.models import (
    AUTO_KEY,
    ModelChoiceRow,
    model_choices,
    model_key,
    model_ref,
)

HISTORY_PAGE = 10
# The typed fields of the agent form, as named in the form and on this state.
FORM_FIELDS = ("name", "instructions", "temperature", "max_output_tokens")


@dataclasses.dataclass
class AgentRow:
    id: str = ""
    name: str = ""
    latest_version: int = 0
    is_default: bool = False


@dataclasses.dataclass
class VersionRow:
    version: int = 0
    name: str = ""
    created_iso: str = ""


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")


class AgentsTabState(rx.State):
    """Per tab: the list, the open form and its history page."""

    agents: list[AgentRow] = []
    choices: list[ModelChoiceRow] = []
    # The form ("" agent id: a new agent).
    editing: bool = False
    agent_id: str = ""
    base_version: int = 0
    name: str = ""
    instructions: str = ""
    model: str = AUTO_KEY
    temperature: str = ""
    max_output_tokens: str = ""
    tools: list[str] = []
    form_error: str = ""
    form_generation: int = 0  # the form's key: each opened agent mounts fresh fields
    # History of the open agent, newest first, a page at a time.
    versions: list[VersionRow] = []
    versions_more: bool = False

    known_tools: list[str] = list(KNOWN_TOOLS)
    max_instructions: int = MAX_INSTRUCTIONS_CHARS
    temperature_hint: str = f"{MIN_TEMPERATURE:g}-{MAX_TEMPERATURE:g}, empty: the model's own"
    tokens_hint: str = f"1-{MAX_OUTPUT_TOKENS:,}, empty: the model's own"

    def _library(self):
        return services().agents(current_user_id())

    @rx.event
    async def load(self) -> None:
        """on_load of ``/agents``."""
        await self._reload_list()
        self.choices = await model_choices()

    async def _reload_list(self) -> None:
        found = await offload(self._library().list_agents)
        self.agents = [AgentRow(a.agent_id, a.name, a.latest_version, a.is_default) for a in found]

    @rx.event
    def new_agent(self) -> None:
        self._open_form("", 0, AgentSpec(name=""))
        self.versions, self.versions_more = [], False

    @rx.event
    async def edit_agent(self, agent_id: str):  # noqa: ANN201
        try:
            current = await offload(self._library().load, agent_id)
        except ChatsError as exc:
            return rx.toast.error(str(exc))
        if self.editing and agent_id == self.agent_id and current.version == self.base_version:
            return None  # already open at its latest version: reopening would drop what is typed
        self._open_form(agent_id, current.version, current.spec)
        self.versions = []
        await self._more_versions()
        return None

    def _open_form(self, agent_id: str, version: int, spec: AgentSpec) -> None:
        self.editing, self.agent_id, self.base_version = True, agent_id, version
        self.form_generation += 1
        self.name, self.instructions = spec.name, spec.instructions
        self.model = model_key(spec.model)
        self.temperature = "" if spec.temperature is None else f"{spec.temperature:g}"
        self.max_output_tokens = (
            "" if spec.max_output_tokens is None else str(spec.max_output_tokens)
        )
        self.tools = list(spec.tools)
        self.form_error = ""

    @rx.event
    def cancel(self) -> None:
        self.editing, self.form_error = False, ""

    @rx.event
    def set_model(self, value: str) -> None:
        self.model = value

    @rx.event
    def toggle_tool(self, tool: str) -> None:
        self.tools = (
            [t for t in self.tools if t != tool] if tool in self.tools else [*self.tools, tool]
        )

    def _spec(self) -> AgentSpec:
        """The form as a spec; ValueError with a sentence for a field that is not a number."""
        try:
            temperature = float(self.temperature) if self.temperature.strip() else None
        except ValueError:
            raise ValueError(f"temperature: {self.temperature!r} is not a number") from None
        try:
            tokens = int(self.max_output_tokens) if self.max_output_tokens.strip() else None
        except ValueError:
            raise ValueError(
                f"max output tokens: {self.max_output_tokens!r} is not a whole number"
            ) from None
        return AgentSpec(
            name=self.name,
            instructions=self.instructions,
            model=model_ref(self.model),
            temperature=temperature,
            max_output_tokens=tokens,
            tools=tuple(t for t in KNOWN_TOOLS if t in self.tools),
        )

    @rx.event
    async def save(self):  # noqa: ANN201
        """Create, or save the next version; any refusal stays on the form, nothing saved."""
        library = self._library()
        try:
            spec = self._spec()
            if self.agent_id:
                saved = await offload(
                    library.save, self.agent_id, spec, expected_version=self.base_version
                )
            else:
                saved = await offload(library.create, spec)
        except (ChatsError, ValueError) as exc:
            self.form_error = f"Not saved. {exc}"
            return None
        self.form_error = ""
        self.agent_id, self.base_version = saved.agent_id, saved.version
        services().agent_saved(current_user_id(), saved.agent_id)
        self.versions = []
        await self._more_versions()
        await self._reload_list()
        return rx.toast.success(f"Saved {saved.spec.name} v{saved.version}.")

    @rx.event
    async def save_form(self, form_data: dict[str, object]):  # noqa: ANN201
        """Save as the form's fields read when Save was pressed (the model and tools are
        set as they change)."""
        for field in FORM_FIELDS:
            value = form_data.get(field)
            if isinstance(value, str):
                setattr(self, field, value)
        return await self.save()

    async def _more_versions(self) -> None:
        before = self.versions[-1].version if self.versions else None
        page = await offload(
            self._library().versions, self.agent_id, before=before, limit=HISTORY_PAGE + 1
        )
        shown = page[:HISTORY_PAGE]
        self.versions = self.versions + [
            VersionRow(v.version, v.name, _iso(v.created_at)) for v in shown
        ]
        self.versions_more = len(page) > HISTORY_PAGE

    @rx.event
    async def more_versions(self) -> None:
        if self.agent_id and self.versions_more:
            await self._more_versions()

    @rx.event
    async def set_default(self, agent_id: str):  # noqa: ANN201
        """What a new chat starts with ("" : the built-in assistant)."""
        try:
            await offload(self._library().set_default, agent_id or None)
        except ChatsError as exc:
            return rx.toast.error(str(exc))
        await self._reload_list()
        return None

    @rx.event
    async def new_chat_with(self, agent_id: str):  # noqa: ANN201
        """A new chat bound to this agent (pinned to its newest version)."""
        return await open_new_chat_with(agent_id)
