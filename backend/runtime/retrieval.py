"""Retrieval: past messages of the user's other chats quoted into a turn's prompt.

Only what the *user* wrote is quoted back ("what did I say about ..."): an assistant reply
that merely repeats the words is not a source. Retrieval is an aid, so it fails soft: a
search that throws means no retrieved context this turn, never a failed turn.

The ``search_chats`` tool also searches by meaning (issue 29) when the directory's search by
meaning is on (``meaning``: asked per call, so its worker and model start on the first use):
the words' ranking and the nearest messages are fused, exact words first. The automatic
retrieval of a turn stays by words (it runs every turn; the tool runs when the model asks).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from backend.chats import SNIPPET_END, SNIPPET_START, ChatHit
from backend.models import ContextItem, ModelProvider
from backend.runtime.ports import DirectoryPort
from backend.runtime.prompt import text_of
from backend.runtime.records import RunRecord
from backend.runtime.titles import chat_title

if TYPE_CHECKING:  # numpy: imported on the first search by meaning only
    from backend.chats.meaning_search import MeaningSearch

logger = logging.getLogger(__name__)

RETRIEVAL_LIMIT = 5
RETRIEVAL_TERMS = 4
MeaningSource = Callable[[], "MeaningSearch | None"]
"""The directory's search by meaning, asked for at each use (None: off, or no vectors)."""


class Retriever:
    """Ranks the directory's message hits for a turn's query."""

    def __init__(self, directory: DirectoryPort, meaning: MeaningSource | None = None) -> None:
        self._directory = directory
        self._meaning = meaning

    async def retrieve(
        self,
        chat_id: str,
        run: RunRecord,
        user_text: str,
        model: ModelProvider,
        within: frozenset[str] | None = None,
    ) -> list[ContextItem]:
        """What ``model`` (the run's) asks to have quoted; text models usually ask nothing.

        ``within``: the only chats that may be quoted (a project's), None for any."""
        query = model.retrieval_query(user_text) if user_text else None
        if not query:
            return []
        try:
            return await asyncio.to_thread(self._search, run, query, within)
        except Exception:  # retrieval is an aid: a failing search must not fail the turn
            logger.warning("retrieval failed for chat %s", chat_id, exc_info=True)
            return []

    def search(
        self, run: RunRecord, query: str, within: frozenset[str] | None = None
    ) -> list[ContextItem]:
        """The ``search_chats`` tool's results (synchronous: call it from a thread): by words
        and, when it is on, by meaning."""
        return self._search(run, query, within, by_meaning=True)

    def _search(
        self,
        run: RunRecord,
        query: str,
        within: frozenset[str] | None = None,
        *,
        by_meaning: bool = False,
    ) -> list[ContextItem]:
        """Past *user* messages matching the query, best first."""
        own = {run.user_message_id, run.assistant_message_id}
        hits = self._by_words(query, within)
        meaning = self._by_meaning(query, within) if by_meaning else []
        if meaning:
            from backend.chats.meaning_search import fuse_hits  # numpy: once meaning is on

            hits = fuse_hits(hits, meaning)
        titles: dict[str, str | None] = {}
        items: list[ContextItem] = []
        for hit in hits:
            if hit.message_id in own:
                continue
            message = self._load_message(hit.chat_id, hit.message_id)
            if message is None or message.get("role") != "user":
                continue
            if hit.chat_id not in titles:
                titles[hit.chat_id] = chat_title(self._directory, hit.chat_id)
            text = text_of(message) or _plain_snippet(hit.snippet)
            source = titles[hit.chat_id] or ""
            items.append(ContextItem(text, source=source, ref=f"{hit.chat_id}/{hit.message_id}"))
            if len(items) >= RETRIEVAL_LIMIT:
                break
        return items

    def _by_words(self, query: str, within: frozenset[str] | None) -> list[ChatHit]:
        """Hits of the query's words, most words matched first. Each word is searched on its
        own and the hits merged, so a message holding some of the words counts."""
        scores: dict[tuple[str, str], tuple[int, ChatHit]] = {}
        for term in query.split()[:RETRIEVAL_TERMS]:
            for hit in self._directory.search_messages(term, limit=RETRIEVAL_LIMIT * 4):
                if within is not None and hit.chat_id not in within:
                    continue
                key = (hit.chat_id, hit.message_id)
                matched, best = scores.get(key, (0, hit))
                scores[key] = (matched + 1, best if best.rank <= hit.rank else hit)
        ordered = sorted(scores.values(), key=lambda found: (-found[0], found[1].rank))
        return [hit for _matched, hit in ordered]

    def _by_meaning(self, query: str, within: frozenset[str] | None) -> list[ChatHit]:
        """Hits nearest in meaning first; none when search by meaning is off."""
        meaning = self._meaning() if self._meaning is not None else None
        if meaning is None:
            return []
        return meaning.meaning_hits(query, chat_ids=within).hits

    def _load_message(self, chat_id: str, message_id: str) -> dict[str, Any] | None:
        try:
            return self._directory.get_chat(chat_id).session.get_message(message_id)
        except Exception:  # deleted since it was indexed, or unreadable: skip the hit
            return None


def _plain_snippet(snippet: str) -> str:
    return snippet.replace(SNIPPET_START, "").replace(SNIPPET_END, "")
