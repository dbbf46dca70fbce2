"""The vocabulary every model provider speaks: one request shape in, one event stream out.

Pure data, no I/O. The runtime builds a :class:`ModelRequest`; a provider turns it into
:class:`TextDelta`, :class:`ToolCall` and exactly one final :class:`Finish` event.

Invariants:

* A request carries the material the runtime gathered for the turn (shared memory, retrieved
  past messages, session state, the thread summary) as structured :class:`ContextSection`
  values, not as prose glued into the system prompt. A text model gets them rendered
  (:meth:`ContextSection.render`); the offline assistant reads the ``items`` directly, so it
  never has to parse free text.
* Tool-call ``arguments`` are always a decoded ``dict``: a provider that receives arguments it
  cannot decode raises instead of passing a string through.
* ``Finish`` is the last event of every successful stream; a stream that ends without one is
  broken (:class:`backend.errors.ModelStreamError`).
* A reply longer than the client's limit is not an error: it ends with the text of
  :func:`reply_cut_marker` and ``Finish(REPLY_CUT_REASON)``, so whoever stores the stream
  stores the cut as the user will see it, with no special case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts when the server reports them (many local servers do not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TextDelta:
    """The next piece of the reply's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call: emitted once its arguments have fully arrived."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Finish:
    """End of a response; ``reason`` as the server said (``stop``, ``tool_calls``, ``length``),
    or :data:`REPLY_CUT_REASON` when the client cut the reply at its size limit."""

    reason: str
    usage: Usage | None = None


ModelEvent = TextDelta | ToolCall | Finish

REPLY_CUT_REASON = "cut"
"""``Finish.reason`` of a reply the client stopped reading at its size limit."""

_REPLY_CUT_MARKER = "\n\n[Reply cut: longer than {limit}]"


def reply_cut_marker(limit_bytes: int) -> str:
    """The text that ends a reply cut at ``limit_bytes``: ``[Reply cut: longer than 1 MiB]``."""
    return _REPLY_CUT_MARKER.format(limit=_human_bytes(limit_bytes))


def _human_bytes(size: int) -> str:
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size:,} bytes"


# The tools the app offers a model, by the name the model calls (one list: the agent form
# checks a choice against it, the runtime runs each, the offline assistant calls ``remember``).
REMEMBER_TOOL = "remember"
UPDATE_STATE_TOOL = "update_session_state"
SEARCH_CHATS_TOOL = "search_chats"
TOOL_NAMES: tuple[str, ...] = (REMEMBER_TOOL, UPDATE_STATE_TOOL, SEARCH_CHATS_TOOL)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelMessage:
    """One turn of the conversation as a model sees it.

    ``tool_calls`` is set on assistant turns that called tools; ``tool_call_id`` on the
    ``tool`` turn carrying one call's result.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One retrieved fact or quoted message. ``source`` names where it came from."""

    text: str
    source: str = ""
    ref: str = ""


ContextKind = Literal["memory", "retrieval", "session_state", "summary", "block"]


@dataclass(frozen=True, slots=True)
class ContextSection:
    """A block of turn context, structured for machines and renderable for models."""

    kind: ContextKind
    title: str
    text: str = ""
    items: tuple[ContextItem, ...] = ()

    def render(self) -> str:
        """The section as a text model reads it inside the system prompt."""
        body = self.text
        if not body and self.items:
            body = "\n".join(
                f"- [{item.source}] {item.text}" if item.source else f"- {item.text}"
                for item in self.items
            )
        return f"## {self.title}\n{body}".rstrip()


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs. Providers must not mutate it."""

    messages: tuple[ModelMessage, ...]
    system: str = ""
    context: tuple[ContextSection, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def section(self, kind: ContextKind) -> ContextSection | None:
        """The first context section of ``kind``, if the runtime supplied one."""
        return next((s for s in self.context if s.kind == kind), None)

    def has_tool(self, name: str) -> bool:
        return any(tool.name == name for tool in self.tools)

    def system_prompt(self) -> str:
        """System prompt followed by every non-empty context section, as one string."""
        parts = [self.system.strip()] if self.system.strip() else []
        parts += [s.render() for s in self.context if s.text or s.items]
        return "\n\n".join(parts)
