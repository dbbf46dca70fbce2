"""A reply's token usage: what the server reported, else an estimate that says it is one.

Pure code, no I/O. A reply may take several model calls (tool rounds); its usage is the sum
over them, as a bill would add them up. A call whose server reported ``usage`` counts its
numbers; one that did not (many local servers do not, and a call that broke off never gets
to) counts the runtime's estimate of the prompt it sent and of the text and tool calls it
got back, and then the whole reply's usage is marked ``estimated``: one guessed call makes
the total a guess.

Stored on the assistant message as ``metadata.usage = {"inputTokens", "outputTokens",
"estimated"}`` (the AI SDK's names), by every writer of the reply (checkpoint, commit,
failure, recovery), so a reply finished by another process shows the usage its checkpoint
had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backend.models.types import Usage

USAGE_KEY = "usage"


@dataclass(frozen=True, slots=True)
class ReplyUsage:
    """Tokens one reply cost: sent to the model (input) and received from it (output)."""

    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def plus(self, other: ReplyUsage) -> ReplyUsage:
        return ReplyUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.estimated or other.estimated,
        )

    def metadata_entry(self) -> dict[str, Any]:
        """What a message's metadata gains to carry this usage (read by :meth:`from_metadata`)."""
        return {
            USAGE_KEY: {
                "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens,
                "estimated": self.estimated,
            }
        }

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> ReplyUsage | None:
        """The usage a stored message carries; ``None`` when it has none (or a malformed one:
        a reply's usage is a display, never worth refusing a message over)."""
        raw = (metadata or {}).get(USAGE_KEY)
        if not isinstance(raw, Mapping):
            return None
        tokens_in, tokens_out = _count(raw.get("inputTokens")), _count(raw.get("outputTokens"))
        if tokens_in is None or tokens_out is None:
            return None
        return cls(tokens_in, tokens_out, raw.get("estimated") is not False)


def call_usage(reported: Usage | None, *, sent_estimate: int, received_estimate: int) -> ReplyUsage:
    """One model call's usage: the server's numbers when it gave them, else the estimates."""
    if reported is not None:
        return ReplyUsage(reported.prompt_tokens, reported.completion_tokens)
    return ReplyUsage(sent_estimate, received_estimate, estimated=True)


def _count(value: object) -> int | None:
    """A stored token count, or None unless it is a non-negative int (bool is not one)."""
    return value if type(value) is int and value >= 0 else None
