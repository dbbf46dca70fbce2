"""Retrieval: past messages of the user's other chats quoted into a turn's prompt.

Only what the *user* wrote is quoted back ("what did I say about ..."): an assistant reply
that merely repeats the words is not a source. Retrieval is an aid, so it fails soft: a
search that throws means no retrieved context this turn, never a failed turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backend.chats import SNIPPET_END, SNIPPET_START
from backend.models import ContextItem, ModelProvider
from backend.runtime.ports import DirectoryPort
from backend.runtime.prompt import text_of
from backend.runtime.records import RunRecord
from backend.runtime.titles import chat_title

logger = logging.getLogger(__name__)

RETRIEVAL_LIMIT = 5
RETRIEVAL_TERMS = 4


class Retriever:
    """Ranks the directory's message hits for a turn's query."""

    def __init__(self, directory: DirectoryPort) -> None:
        self._directory = directory

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
        """The ``search_chats`` tool's results (synchronous: call it from a thread)."""
        return self._search(run, query, within)

    def _search(
        self, run: RunRecord, query: str, within: frozenset[str] | None = None
    ) -> list[ContextItem]:
        """Past *user* messages matching the query's words, most words matched first.

        The directory matches phrases, so each word is searched on its own and the hits are
        merged.
        """
        own = {run.user_message_id, run.assistant_message_id}
        scores: dict[tuple[str, str], tuple[int, float, str]] = {}
        for term in query.split()[:RETRIEVAL_TERMS]:
            for hit in self._directory.search_messages(term, limit=RETRIEVAL_LIMIT * 4):
                if hit.message_id in own or (within is not None and hit.chat_id not in within):
                    continue
                key = (hit.chat_id, hit.message_id)
                matched, rank, snippet = scores.get(key, (0, hit.rank, hit.snippet))
                scores[key] = (matched + 1, min(rank, hit.rank), snippet)
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        titles: dict[str, str | None] = {}
        items: list[ContextItem] = []
        for (chat_id, message_id), (_matched, _rank, snippet) in ordered:
            message = self._load_message(chat_id, message_id)
            if message is None or message.get("role") != "user":
                continue
            if chat_id not in titles:
                titles[chat_id] = chat_title(self._directory, chat_id)
            text = text_of(message) or _plain_snippet(snippet)
            source = titles[chat_id] or ""
            items.append(ContextItem(text, source=source, ref=f"{chat_id}/{message_id}"))
            if len(items) >= RETRIEVAL_LIMIT:
                break
        return items

    def _load_message(self, chat_id: str, message_id: str) -> dict[str, Any] | None:
        try:
            return self._directory.get_chat(chat_id).session.get_message(message_id)
        except Exception:  # deleted since it was indexed, or unreadable: skip the hit
            return None


def _plain_snippet(snippet: str) -> str:
    return snippet.replace(SNIPPET_START, "").replace(SNIPPET_END, "")
