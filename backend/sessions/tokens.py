"""Heuristic token estimates, stamped on every stored row.

The store never calls a tokenizer: compaction thresholds only need an order of magnitude, and a
heuristic costs nothing to compute on the write path.

* ``estimate_string_tokens(t) = ceil(max(len(t) / 4, words(t) * 1.3))`` (0 for an empty string).
  ``len`` counts Python **code points**, not UTF-16 code units as the TypeScript reference does:
  an emoji counts 1 here and 2 there. The estimate is a heuristic either way; code points are
  what Python gives for free and keep the estimate independent of the storage encoding.
* a message costs 4 tokens of framing plus its parts (text/reasoning text, tool input + output);
* a stored row additionally charges inline media: 1,600 per image, ``min(bytes / 4, 20,000)``
  for any other inline ``data:`` file. Row estimates are computed before attachment extraction,
  on the message exactly as the caller sees it.

Pure code: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from backend.sessions.tool_parts import is_tool_part

CHARS_PER_TOKEN = 4
WORDS_TOKEN_MULTIPLIER = 1.3
TOKENS_PER_MESSAGE = 4
IMAGE_ATTACHMENT_TOKENS = 1_600
MAX_ATTACHMENT_TOKENS = 20_000

# Word counting splits the text; past this size it goes piece by piece so a multi-megabyte
# message never materialises a list of a million words.
_WORD_COUNT_PIECE_CHARS = 1 << 20


def estimate_string_tokens(text: str) -> int:
    """Tokens in ``text``: the larger of the character and the word heuristic."""
    if not text:
        return 0
    by_chars = len(text) / CHARS_PER_TOKEN
    by_words = count_words(text) * WORDS_TOKEN_MULTIPLIER
    return math.ceil(by_chars if by_chars > by_words else by_words)


def count_words(text: str) -> int:
    """Whitespace-separated words, in bounded memory."""
    if len(text) <= _WORD_COUNT_PIECE_CHARS:
        return len(text.split())
    words = 0
    previous_ends_in_word = False
    for start in range(0, len(text), _WORD_COUNT_PIECE_CHARS):
        piece = text[start : start + _WORD_COUNT_PIECE_CHARS]
        words += len(piece.split())
        # A word cut in two by the piece boundary was counted twice.
        if previous_ends_in_word and not piece[0].isspace():
            words -= 1
        previous_ends_in_word = not piece[-1].isspace()
    return words


def _value_tokens(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return estimate_string_tokens(value)
    return estimate_string_tokens(
        json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    )


def _message_tokens(message: Mapping[str, Any], *, inline_files: bool) -> int:
    # One loop for both estimates: this runs on every append.
    total = TOKENS_PER_MESSAGE
    parts = message.get("parts")
    if not isinstance(parts, list):
        return total
    for part in parts:
        if not isinstance(part, dict):
            continue
        part_type = part.get("type")
        if part_type == "text" or part_type == "reasoning":
            text = part.get("text")
            if text is None:
                text = part.get("reasoning")
            if isinstance(text, str) and len(text) <= _WORD_COUNT_PIECE_CHARS:
                if text:  # inlined estimate_string_tokens: the common case of every append
                    by_chars = len(text) / CHARS_PER_TOKEN
                    by_words = len(text.split()) * WORDS_TOKEN_MULTIPLIER
                    total += math.ceil(by_chars if by_chars > by_words else by_words)
            else:
                total += _value_tokens(text)
        elif is_tool_part(part_type):
            output = part.get("output")
            total += _value_tokens(part.get("input"))
            total += _value_tokens(part.get("result") if output is None else output)
        elif "text" in part:
            total += _value_tokens(part["text"])
        elif "result" in part:
            total += _value_tokens(part["result"])
        if inline_files and part_type == "file":
            total += _inline_file_tokens(part)
    return total


def estimate_message_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of ``messages`` as a model would see them (inline media not charged here)."""
    return sum(_message_tokens(message, inline_files=False) for message in messages)


def estimate_row_tokens(message: Mapping[str, Any]) -> int:
    """The estimate stamped on a stored row: the message plus its inline ``data:`` files."""
    return _message_tokens(message, inline_files=True)


def _inline_file_tokens(part: Mapping[str, Any]) -> int:
    url = part.get("url")
    if not isinstance(url, str) or not url.startswith("data:"):
        return 0
    header, _, payload = url.partition(",")
    media_type = part.get("mediaType")
    if not isinstance(media_type, str):
        media_type = header[5:].split(";", 1)[0]
    if media_type.startswith("image/"):
        return IMAGE_ATTACHMENT_TOKENS
    size = len(payload) * 3 // 4 if header.endswith(";base64") else len(payload)
    return min(math.ceil(size / CHARS_PER_TOKEN), MAX_ATTACHMENT_TOKENS)
