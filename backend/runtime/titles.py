"""After a completed turn: the sidebar preview, and a title for a chat that has none yet.

This work runs beside the run queue, not inside the run's lease: the reply is committed
already, and a slow or failing title model must neither delay the next run nor fail this one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from backend.chats.text import PLACEHOLDER_TITLE, is_default_title
from backend.errors import ModelError
from backend.models import ModelProvider, heuristic_title
from backend.runtime.ports import DirectoryPort
from backend.runtime.records import RunStatus
from backend.runtime.temporary_chats import is_temporary
from backend.runtime.working_chats import WorkingChat

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 140
MAX_TITLE_CHARS = 60
TITLE_TIMEOUT_S = 30
# How much of the first exchange the title prompt quotes, per side.
TITLE_PROMPT_CHARS = 1000
TITLE_PROMPT = (
    "Write a short title (at most six words, no quotes, no trailing punctuation) for a chat "
    "that starts like this.\n\nUser: {user}\n\nAssistant: {reply}\n\nTitle:"
)


class TurnFollowUp:
    """Preview and title updates of the directory after a turn."""

    def __init__(self, directory: DirectoryPort, clock: Callable[[], int]) -> None:
        self._directory = directory
        self._clock = clock

    async def after_completed(
        self, conv: WorkingChat, reply: str, user_text: str, model: ModelProvider
    ) -> None:
        """Preview, and a title for an untitled chat (by ``model``, the run's)."""
        try:
            await self.record_turn(conv, reply or user_text)
            if await asyncio.to_thread(self._wants_title, conv):
                title = await self._title(user_text, reply, model)
                await asyncio.to_thread(self._set_title, conv, title)
        except Exception:  # the reply is committed; sidebar niceties must not fail it
            logger.warning("post-turn update failed for chat %s", conv.chat_id, exc_info=True)

    async def record_turn(self, conv: WorkingChat, text: str) -> None:
        preview = " ".join(text.split())[:PREVIEW_CHARS]
        await asyncio.to_thread(self._directory.record_chat_turn, conv.chat_id, preview)

    async def _title(self, user_text: str, reply: str, model: ModelProvider) -> str:
        fallback = heuristic_title(user_text or reply) or PLACEHOLDER_TITLE
        if model.offline:
            return fallback
        try:
            prompt = TITLE_PROMPT.format(
                user=user_text[:TITLE_PROMPT_CHARS], reply=reply[:TITLE_PROMPT_CHARS]
            )
            raw = await asyncio.wait_for(model.complete(prompt), timeout=TITLE_TIMEOUT_S)
        except (ModelError, TimeoutError):
            return fallback
        title = " ".join(raw.split()).strip(" \"'“”.").removeprefix("Title:").strip()
        return title[:MAX_TITLE_CHARS] or fallback

    def _wants_title(self, conv: WorkingChat) -> bool:
        """After the first completed exchange, while the chat still has a default title.

        A title the user chose (at creation or by renaming, even mid-reply) is never replaced,
        and a temporary chat keeps its own.
        """
        if conv.store.count_runs(conv.chat_id, RunStatus.COMPLETED) != 1:
            return False
        if is_temporary(self._directory, conv.chat_id):
            return False  # never titled by a model
        current = chat_title(self._directory, conv.chat_id, default=None)
        return current is not None and is_default_title(current)

    def _set_title(self, conv: WorkingChat, title: str) -> None:
        self._directory.rename_chat(conv.chat_id, title)
        conv.store.set_title(conv.chat_id, title, self._clock())


def chat_title(
    directory: DirectoryPort, chat_id: str, default: str | None = "another chat"
) -> str | None:
    """The chat's title as the directory has it; ``default`` when it cannot tell."""
    try:
        return str(directory.get_summary(chat_id).title)
    except Exception:  # a deleted chat, a directory without summaries: no title to show
        return default
