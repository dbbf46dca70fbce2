"""The built-in offline assistant: what answers when no model is configured.

It is not a language model and says so (``label``), but it is useful on its own: it answers
from the material the runtime hands it in the request's context sections — the user's shared
memory (``kind="memory"``) and messages retrieved from their past chats
(``kind="retrieval"``) — and it calls the ``remember`` tool when asked to remember something.

Invariants:

* Deterministic: the same request always streams the same reply, split the same way (tests
  and screenshots can rely on it). Tool-call ids derive from the request, not from a clock.
* It reads only structured context (``ContextSection.items``); it never parses prose.
* It streams at a readable pace (``chunk_delay_s`` between chunks; 0 in tests) and yields to
  the event loop between chunks so cancellation lands promptly.

The pure helpers :func:`heuristic_title`, :func:`extractive_summary` and :func:`keywords` are
what the runtime uses for titles and compaction when it runs offline.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass

from backend.models.types import (
    REMEMBER_TOOL,
    ContextItem,
    Finish,
    ModelEvent,
    ModelMessage,
    ModelRequest,
    TextDelta,
    ToolCall,
)

OFFLINE_LABEL = "Offline assistant (no model configured)"
OFFLINE_MODEL_NAME = "offline"
DEFAULT_CHUNK_DELAY_S = 0.03
DEFAULT_WORDS_PER_CHUNK = 3
MAX_QUOTES = 5
MAX_QUOTE_CHARS = 240
TITLE_MAX_WORDS = 6
TITLE_MAX_CHARS = 60
SUMMARY_MAX_CHARS = 1500

_STOPWORD_LIST = """a about above after again all also am an and any are as at be been before
    being below
    between both but by can could did do does doing done down during each ever few for from
    further had has have having he her here hers him his how i if in into is it its itself
    just let me mention mentioned more most my myself no nor not now of off on once only or
    other our ours out over own please said same say she should so some such tell than that
    the their them then there these they this those through to told too under until up very
    was we were what when where which while who whom why will with would write wrote you your
    yours know remember chat chats message messages search find look past earlier"""
_STOPWORDS = frozenset(_STOPWORD_LIST.split())

_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|keep\s+in\s+mind|don'?t\s+forget)"
    r"(?:\s+that)?[\s,:]+(?P<fact>.+?)[\s.!]*$",
    re.IGNORECASE | re.DOTALL,
)
_RECALL = (
    re.compile(
        r"\bwhat\s+(?:did|have|had)\s+i\s+(?:ever\s+)?"
        r"(?:say|said|tell|told|mention(?:ed)?|write|written|wrote|ask(?:ed)?)"
        r"(?:\s+you)?(?:\s+(?:earlier|before))?\s+(?:about|regarding|on)\s+(?P<topic>.+)",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"\b(?:did|have)\s+i\s+(?:ever\s+)?(?:mention(?:ed)?|talk(?:ed)?\s+about|said|say|"
        r"tell\s+you\s+about|told\s+you\s+about)\s+(?P<topic>.+)",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"^\s*(?:search|look\s+up|find)(?:\s+(?:in\s+|through\s+)?my\s+(?:past\s+)?"
        r"(?:chats|messages|conversations))?(?:\s+for)?\s+(?P<topic>.+)",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"\bwhat\s+do\s+you\s+(?:know|remember)\s+about\s+(?P<topic>.+)",
        re.IGNORECASE | re.DOTALL,
    ),
)
_ABOUT_ME = re.compile(
    r"\bwhat\s+do\s+you\s+(?:know|remember)(?:\s+about\s+me)?\s*\??\s*$", re.IGNORECASE
)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|hiya|good\s+(?:morning|afternoon|evening))\b", re.I)
_WORD = re.compile(r"[\w'-]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

CAPABILITIES = (
    "What I can do without a model:\n"
    "• remember facts for every chat — “remember that my sister is called Ana”\n"
    "• find what you said in any chat — “what did I say about the trip?”\n"
    "• tell you what I remember — “what do you know about me?”"
)
HOW_TO_CONNECT = (
    "To chat with a real model, set CHATS_MODEL_BASE_URL to an OpenAI-compatible server "
    "(for example a local Ollama at http://localhost:11434/v1) and CHATS_MODEL to its model name."
)


# ── pure helpers (also used by the runtime when offline) ────────────


def keywords(text: str, *, limit: int = 8) -> list[str]:
    """Content words of ``text`` in order, lower-cased, without stopwords or duplicates."""
    seen: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word.strip("'-")
        if len(word) < 2 or word in _STOPWORDS or word in seen:
            continue
        seen.append(word)
        if len(seen) >= limit:
            break
    return seen


def heuristic_title(text: str) -> str:
    """A short chat title from the first user message; ``""`` when nothing fits."""
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    sentence = _SENTENCE_END.split(first_line, maxsplit=1)[0]
    sentence = re.sub(
        r"^(?:(?:hi|hello|hey)\b[\s,!.]*)?(?:(?:please|can you|could you|would you|"
        r"i want to|i'd like to|help me)\s+)*",
        "",
        sentence,
        flags=re.IGNORECASE,
    )
    words = sentence.split()[:TITLE_MAX_WORDS]
    title = " ".join(words).strip(" .,:;!?-—\"'“”")
    if len(title) > TITLE_MAX_CHARS:
        title = title[:TITLE_MAX_CHARS].rsplit(" ", 1)[0]
    return title[:1].upper() + title[1:]


def extractive_summary(
    turns: Iterable[tuple[str, str]], *, max_chars: int = SUMMARY_MAX_CHARS
) -> str:
    """Summarise ``(role, text)`` turns by quoting the first sentence of each, in order.

    When the quotes do not fit ``max_chars`` the earliest and latest turns are kept and the
    middle is counted, so the summary stays honest about what it left out.
    """
    lines = []
    for role, text in turns:
        sentence = _first_sentence(text)
        if sentence:
            who = "User" if role == "user" else "Assistant" if role == "assistant" else role
            lines.append(f"- {who}: {sentence}")
    if not lines:
        return ""
    header = "Summary of earlier turns (extractive):"
    if len(header) + sum(len(line) + 1 for line in lines) <= max_chars:
        return "\n".join([header, *lines])
    head, tail = [], []
    budget = max_chars - len(header) - 40
    left, right = 0, len(lines) - 1
    while left <= right:
        if budget - len(lines[left]) - 1 < 0:
            break
        head.append(lines[left])
        budget -= len(lines[left]) + 1
        left += 1
        if left > right or budget - len(lines[right]) - 1 < 0:
            break
        tail.insert(0, lines[right])
        budget -= len(lines[right]) + 1
        right -= 1
    omitted = len(lines) - len(head) - len(tail)
    middle = [f"- … {omitted} more turns …"] if omitted else []
    return "\n".join([header, *head, *middle, *tail])


def _first_sentence(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""
    if len(sentence) > limit:
        sentence = sentence[: limit - 1].rsplit(" ", 1)[0] + "…"
    return sentence


def _clip(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _topic(raw: str) -> str:
    return raw.strip().rstrip("?.!").strip().strip("\"'“”")


# ── the assistant ───────────────────────────────────────────────────


@dataclass(frozen=True)
class OfflineAssistant:
    """Deterministic, model-free assistant. Immutable; safe to share."""

    chunk_delay_s: float = DEFAULT_CHUNK_DELAY_S
    words_per_chunk: int = DEFAULT_WORDS_PER_CHUNK
    offline: bool = True

    @property
    def name(self) -> str:
        return OFFLINE_MODEL_NAME

    @property
    def label(self) -> str:
        return OFFLINE_LABEL

    def retrieval_query(self, user_text: str) -> str | None:
        if _REMEMBER.match(user_text):
            return None
        topic = _recall_topic(user_text)
        words = keywords(topic if topic is not None else user_text, limit=6)
        return " ".join(words) or None

    async def complete(self, prompt: str) -> str:
        return extractive_summary([("user", line) for line in prompt.splitlines() if line.strip()])

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        decision = self._decide(request)
        if isinstance(decision, ToolCall):
            await asyncio.sleep(0)
            yield decision
            yield Finish("tool_calls")
            return
        for index, piece in enumerate(_chunks(decision, self.words_per_chunk)):
            if index and self.chunk_delay_s > 0:
                await asyncio.sleep(self.chunk_delay_s)
            else:
                await asyncio.sleep(0)
            yield TextDelta(piece)
        yield Finish("stop")

    # Decision logic is synchronous and pure: request in, reply text or tool call out.

    def _decide(self, request: ModelRequest) -> str | ToolCall:
        last = request.messages[-1] if request.messages else ModelMessage("user", "")
        if last.role == "tool":
            return _after_tool(request.messages)
        text = last.content.strip()
        memory = request.section("memory")
        memory_items = memory.items if memory else ()
        retrieved = request.section("retrieval")
        hits = retrieved.items if retrieved else ()

        remember = _REMEMBER.match(text)
        if remember and request.has_tool(REMEMBER_TOOL):
            fact = " ".join(remember.group("fact").split())
            digest = hashlib.sha256(f"{len(request.messages)}:{fact}".encode()).hexdigest()[:12]
            return ToolCall(f"call_{digest}", REMEMBER_TOOL, {"fact": fact})
        if _ABOUT_ME.search(text):
            return _about_me(memory_items)
        topic = _recall_topic(text)
        if topic is not None:
            return _recall(topic, memory_items, hits)
        if not text:
            return "I didn't get any text in that message. " + CAPABILITIES
        intro = (
            "Hello! I'm the offline assistant."
            if _GREETING.match(text)
            else "I'm the offline assistant, so I can't write a free-form answer to that: "
            "no language model is configured."
        )
        parts = [intro, CAPABILITIES, HOW_TO_CONNECT]
        related = _quotes(hits)
        if related:
            parts.insert(1, "Related things you said in your chats:\n" + related)
        return "\n\n".join(parts)


def _recall_topic(text: str) -> str | None:
    for pattern in _RECALL:
        match = pattern.search(text)
        if match:
            topic = _topic(match.group("topic"))
            if topic:
                return topic
    return None


def _matching(items: Sequence[ContextItem], words: Sequence[str]) -> list[ContextItem]:
    if not words:
        return list(items)
    return [item for item in items if any(word in item.text.lower() for word in words)]


def _quotes(hits: Sequence[ContextItem]) -> str:
    lines = []
    for item in hits[:MAX_QUOTES]:
        where = f"In “{item.source}”" if item.source else "In a past chat"
        lines.append(f"• {where}: “{_clip(item.text)}”")
    return "\n".join(lines)


def _recall(topic: str, memory_items: Sequence[ContextItem], hits: Sequence[ContextItem]) -> str:
    words = keywords(topic)
    remembered = _matching(memory_items, words)
    # Earlier "what did I say about ..." questions are not things the user said about it.
    hits = [item for item in hits if _recall_topic(item.text) is None]
    parts = []
    if hits:
        parts.append(f"Here's what you said about “{topic}”:\n{_quotes(hits)}")
    if remembered:
        facts = "\n".join(f"• {_clip(item.text)}" for item in remembered[:MAX_QUOTES])
        parts.append(f"From your shared memory:\n{facts}")
    if not parts:
        return (
            f"I looked through your past chats and your shared memory but found nothing about "
            f"“{topic}”. Try other words, or tell me “remember that …” so I keep it for next time."
        )
    return "\n\n".join(parts)


def _about_me(memory_items: Sequence[ContextItem]) -> str:
    if not memory_items:
        return (
            "I don't remember anything about you yet. Tell me “remember that …” and I'll keep "
            "it in your shared memory, available in every chat."
        )
    facts = "\n".join(f"• {_clip(item.text)}" for item in memory_items[: MAX_QUOTES * 4])
    return f"Here's what I remember about you:\n{facts}"


def _after_tool(messages: Sequence[ModelMessage]) -> str:
    """Reply to the result of the tool this assistant just called."""
    result = messages[-1]
    call = next(
        (c for m in reversed(messages) for c in m.tool_calls if c.id == result.tool_call_id),
        None,
    )
    try:
        output = json.loads(result.content) if result.content else {}
    except json.JSONDecodeError:
        output = {"message": result.content}
    if isinstance(output, dict) and output.get("error"):
        return f"I couldn't save that: {output['error']}"
    if call is not None and call.name == REMEMBER_TOOL:
        fact = str(call.arguments.get("fact", "")).rstrip(".")
        return (
            f"Got it — I'll remember that {fact}. It's in your shared memory now, "
            "so every chat can use it."
        )
    return "Done."


def _chunks(text: str, words_per_chunk: int) -> list[str]:
    """Split keeping every character (whitespace included), ``words_per_chunk`` words each."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    size = max(1, words_per_chunk)
    return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)] or [text]
