"""What an agent is, and the checks every saved version passes (pure, no I/O).

Limits (documented for the UI; each refusal is an :class:`~backend.errors.InvalidAgentError`
naming the field, raised before anything is written):

* ``name``: 1-:data:`MAX_NAME_CHARS` characters after trimming.
* ``instructions`` (the system prompt, sent exactly as saved): at most
  :data:`MAX_INSTRUCTIONS_CHARS` characters; may be empty.
* ``temperature``: ``None`` (the model's default) or :data:`MIN_TEMPERATURE`-
  :data:`MAX_TEMPERATURE`.
* ``max_output_tokens``: ``None`` or 1-:data:`MAX_OUTPUT_TOKENS`.
* ``tools``: a subset of :data:`KNOWN_TOOLS`, kept in that order.
* ``starter_prompts``: at most :data:`MAX_STARTER_PROMPTS`, each 1-:data:`MAX_STARTER_CHARS`.
* ``model``: ``None`` (the chat's or the server's default) or a ``ModelRef`` its endpoint
  offers (checked by the library's ``check_model``, see ``backend.endpoints``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from backend.errors import InvalidAgentError
from backend.models import TOOL_NAMES, ModelRef
from backend.storage import well_formed_text

KNOWN_TOOLS: tuple[str, ...] = TOOL_NAMES  # the order an agent's tools are kept in
MAX_NAME_CHARS = 80
MAX_INSTRUCTIONS_CHARS = 32_000
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.0, 2.0
MAX_OUTPUT_TOKENS = 128_000
MAX_STARTER_PROMPTS = 6
MAX_STARTER_CHARS = 500


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """What a user writes in the agent form; every save of it is a new version."""

    name: str
    instructions: str = ""
    model: ModelRef | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    tools: tuple[str, ...] = ()
    starter_prompts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentVersion:
    """One immutable, saved version of an agent (``version`` starts at 1)."""

    agent_id: str
    version: int
    spec: AgentSpec
    created_at: int


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """An agent as the library list shows it (the newest version's name)."""

    agent_id: str
    name: str
    latest_version: int
    updated_at: int
    is_default: bool = False


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One line of an agent's history (its instructions are loaded on demand)."""

    version: int
    name: str
    created_at: int


def checked_spec(spec: AgentSpec) -> AgentSpec:
    """``spec`` trimmed and normalised, or :class:`InvalidAgentError` for its first bad field.

    Its text follows the storage text rule (``well_formed_text``: no lone surrogates, no
    U+0000) here, so the version a save returns is the version a load reads back.
    """
    name = well_formed_text(spec.name).strip() if isinstance(spec.name, str) else None
    if not name:
        raise InvalidAgentError("name", "a name is required")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidAgentError("name", f"longer than {MAX_NAME_CHARS} characters")
    if not isinstance(spec.instructions, str):
        raise InvalidAgentError("instructions", "must be text")
    if len(spec.instructions) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidAgentError(
            "instructions",
            f"{len(spec.instructions):,} characters; the limit is {MAX_INSTRUCTIONS_CHARS:,}",
        )
    return AgentSpec(
        name=name,
        instructions=well_formed_text(spec.instructions),
        model=_model(spec.model),
        temperature=_temperature(spec.temperature),
        max_output_tokens=_max_tokens(spec.max_output_tokens),
        tools=_tools(spec.tools),
        starter_prompts=_starters(spec.starter_prompts),
    )


def _model(model: object) -> ModelRef | None:
    if model is None:
        return None
    if not isinstance(model, ModelRef) or not model.endpoint or not model.model:
        raise InvalidAgentError("model", "choose a model from the list")
    return model


def _temperature(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InvalidAgentError("temperature", "must be a number")
    if not MIN_TEMPERATURE <= value <= MAX_TEMPERATURE:
        raise InvalidAgentError(
            "temperature", f"{value:g} is outside {MIN_TEMPERATURE:g}-{MAX_TEMPERATURE:g}"
        )
    return float(value)


def _max_tokens(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidAgentError("max_output_tokens", "must be a whole number")
    if not 1 <= value <= MAX_OUTPUT_TOKENS:
        raise InvalidAgentError("max_output_tokens", f"{value} is outside 1-{MAX_OUTPUT_TOKENS:,}")
    return value


def _tools(tools: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tools, str):
        raise InvalidAgentError("tools", "must be a list of tool names")
    unknown = [t for t in tools if t not in KNOWN_TOOLS]
    if unknown:
        raise InvalidAgentError(
            "tools", f"unknown {unknown[0]!r}; the tools are {', '.join(KNOWN_TOOLS)}"
        )
    return tuple(t for t in KNOWN_TOOLS if t in tools)


def _starters(prompts: Sequence[str]) -> tuple[str, ...]:
    if isinstance(prompts, str):
        raise InvalidAgentError("starter_prompts", "must be a list of prompts")
    cleaned = []
    for prompt in prompts:
        text = well_formed_text(prompt).strip() if isinstance(prompt, str) else ""
        if not text:
            raise InvalidAgentError("starter_prompts", "a starter prompt is empty")
        if len(text) > MAX_STARTER_CHARS:
            raise InvalidAgentError(
                "starter_prompts", f"one is longer than {MAX_STARTER_CHARS} characters"
            )
        cleaned.append(text)
    if len(cleaned) > MAX_STARTER_PROMPTS:
        raise InvalidAgentError("starter_prompts", f"at most {MAX_STARTER_PROMPTS}")
    return tuple(cleaned)
