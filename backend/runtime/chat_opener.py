"""Opening a chat for the runtime: a live chat id in, its working chat out, its runs looked at.

Every :class:`~backend.runtime.runtime.ChatRuntime` call that touches a chat goes through
:class:`ChatOpener`: the chat must be live in the directory (``KeyError`` otherwise), its
working chat is kept open (:mod:`backend.runtime.working_chats`), and the first open (or a
watcher's recheck) looks at the chat's runs (:mod:`backend.runtime.recovery`), so a reply a
stopped process was writing never shows as streaming forever. A reader of a chat never
written gets ``None``: looking at a chat must not create its file (SPEC, first write).
"""

from __future__ import annotations

import asyncio
import logging

from backend.errors import ChatNotFoundError, ChatsError
from backend.runtime.ports import DirectoryPort
from backend.runtime.recovery import Recovery
from backend.runtime.run_queue import RunQueue
from backend.runtime.working_chats import WorkingChat, WorkingChats

logger = logging.getLogger(__name__)


class ChatOpener:
    """The working chats of one runtime's directory, opened on demand (module docstring)."""

    def __init__(
        self, chats: DirectoryPort, working: WorkingChats, recovery: Recovery, queue: RunQueue
    ) -> None:
        self._chats = chats
        self._working = working
        self._recovery = recovery
        self._queue = queue
        self.closed = False  # set once by the runtime's shutdown or release

    def check_open(self) -> None:
        if self.closed:
            raise ChatsError("the runtime is closed")

    async def open(self, chat_id: str, *, recheck: bool = False) -> WorkingChat:
        """The open chat of a live chat id; opening it looks at its runs (``_recover``).

        ``recheck`` looks again when it is open already: another process may have stopped
        since (a watcher asks for this; a run this runtime claims is never affected).
        """
        self.check_open()
        chat = await asyncio.to_thread(self._chats.get_chat, chat_id)  # KeyError if not live
        conv = self._working.current(chat_id, chat)
        if conv is not None:
            if recheck:
                await self._recover(conv)
            return conv
        conv, built = await self._working.open(chat_id, chat)
        if built:
            await self._recover(conv)
        return conv

    async def open_written(self, chat_id: str, *, recheck: bool = False) -> WorkingChat | None:
        """:meth:`open` for a reader: ``None`` for a chat never written, which has no file
        and reads as its defaults (looking at a chat must not create it: SPEC, first write)."""
        chat = await asyncio.to_thread(self._chats.get_chat, chat_id)  # KeyError if not live
        if chat_id not in self._working and not await asyncio.to_thread(lambda: chat.has_file):
            return None
        return await self.open(chat_id, recheck=recheck)

    async def recover_watched(self, chat_id: str) -> None:
        """Before a watcher replays events: recover the chat's runs, if it has a file at all
        (a chat never written has no runs, and watching must not create its file)."""
        try:
            await self.open_written(chat_id, recheck=True)
        except ChatNotFoundError:
            pass  # deleted meanwhile: the subscription simply sees nothing
        except Exception:  # watching still works; the next open retries the recovery
            logger.warning("could not recover the runs of chat %s", chat_id, exc_info=True)

    async def _recover(self, conv: WorkingChat) -> None:
        """Fail orphaned runs, and let the worker take (or follow) the runs still open."""
        await self._recovery.recover(conv)
        if conv.followed:
            self._queue.wake(conv)
