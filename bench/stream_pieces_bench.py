"""Bytes a watching tab receives per streamed word, as a reply grows longer.

Run: ``.venv/bin/python bench/stream_pieces_bench.py`` (a few seconds, in-process). A reply of
100, 1,000 and 3,000 words is streamed three words per flush (a model at ~75 words/s fills a
40 ms flush with about that) through the real ``SharedConversationState`` and
``chatsapp.live.fanout.shared_change``, and every update it would send is encoded as Reflex encodes
a socket.io event. Side by side, the baseline streams the same flushes into a shared state
that holds the reply in one var, as the app did before ``chatsapp.live.stream_pieces``: Reflex
re-sends a changed var whole, so every flush carried the reply so far.

1. ``stream_bytes_per_word_3000_words``: ratio = pieces / one var, bytes per word of a
   3,000-word reply; goal <= 0.2.
2. ``stream_bytes_per_word_3000_vs_100``: ratio = bytes per word at 3,000 words / at 100
   words, with pieces; goal <= 1.5 (a word costs about the same however long the reply).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import reflex as rx  # noqa: E402
from reflex_base.utils.format import json_dumps  # noqa: E402

import chatsapp.chatsapp  # noqa: E402, F401  (registers every state of the app)
from chatsapp.live.fanout import shared_change  # noqa: E402
from chatsapp.states.shared_conversation import SharedConversationState  # noqa: E402
from tests.support.fake_reflex_app import FakeReflexApp, link  # noqa: E402
from tests.support.streamed_text import StreamedText  # noqa: E402

REPLY_WORDS = (100, 1000, 3000)
WORDS_PER_FLUSH = 3
VOCABULARY = [
    "the",
    "model",
    "writes",
    "a",
    "reply",
    "of",
    "plain",
    "words",
    "with",
    "some",
    "longer",
    "technical",
    "terms",
]


class WholeReplyView(rx.SharedState):
    """The baseline: the streaming reply in one var, as before ``chatsapp.live.stream_pieces``."""

    streaming_text: str = ""


@dataclass
class Run:
    words: int
    frames: int
    payload_bytes: int  # socket.io event frames as sent ("42" + JSON)
    largest_frame: int

    @property
    def per_word(self) -> float:
        return self.payload_bytes / self.words


def flushes(words: int) -> list[str]:
    text = [VOCABULARY[n % len(VOCABULARY)] + " " for n in range(words)]
    return ["".join(text[i : i + WORDS_PER_FLUSH]) for i in range(0, words, WORDS_PER_FLUSH)]


async def stream(words: int, *, pieces: bool) -> Run:
    app = FakeReflexApp()
    app.event_namespace.connect("tab")
    state_cls = SharedConversationState if pieces else WholeReplyView
    await link(app, "conv-bench", state_cls, "tab")
    chunks = flushes(words)
    for text in chunks:
        async with shared_change(app, "conv-bench", state_cls) as view:
            if pieces:
                view.append_streamed(text)
            else:
                view.streaming_text += text
    sizes = [len(("42" + json_dumps(["event", u])).encode()) for u, _ in app.event_namespace.sent]
    if pieces:  # what the tab rebuilds is the reply
        shown = StreamedText()
        for update, _tabs in app.event_namespace.sent:
            shown.apply(next(iter(update.delta.values())))
        assert shown.text == "".join(chunks), "the pieces do not rebuild the reply"
    return Run(words, len(sizes), sum(sizes), max(sizes))


async def main() -> int:
    runs = {
        (words, pieces): await stream(words, pieces=pieces)
        for words in REPLY_WORDS
        for pieces in (False, True)
    }

    def describe(pieces: bool) -> str:
        parts = []
        for words in REPLY_WORDS:
            run = runs[(words, pieces)]
            parts.append(
                f"{words} words: {run.per_word:.0f} B/word, {run.frames} frames, "
                f"largest {run.largest_frame / 1024:.1f} KB"
            )
        return "; ".join(parts)

    longest = REPLY_WORDS[-1]
    ratio = runs[(longest, True)].per_word / runs[(longest, False)].per_word
    print(
        f"stream_bytes_per_word_{longest}_words: ratio={ratio:.2f} goal=<=0.2 "
        f"(pieces: {describe(True)} | one var, the baseline: {describe(False)}; "
        f"{WORDS_PER_FLUSH} words a flush, socket.io frames as encoded)",
        flush=True,
    )
    growth = runs[(longest, True)].per_word / runs[(REPLY_WORDS[0], True)].per_word
    print(
        f"stream_bytes_per_word_{longest}_vs_{REPLY_WORDS[0]}: ratio={growth:.2f} goal=<=1.5 "
        f"(pieces: {runs[(longest, True)].per_word:.0f} B/word at {longest} words, "
        f"{runs[(REPLY_WORDS[0], True)].per_word:.0f} at {REPLY_WORDS[0]}; one var: "
        f"{runs[(longest, False)].per_word:.0f} vs {runs[(REPLY_WORDS[0], False)].per_word:.0f})",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
