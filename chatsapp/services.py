"""Process-wide backend objects the UI talks to: settings, directories, the runtime.

Reflex states are per tab and serialisable, so they hold ids and rendered values only; the
live objects (open SQLite files, running runs) live here, one set per worker process. The
storage core is synchronous: callers go through :func:`offload` so a SQLite call never stalls
the event loop that serves every tab of this worker.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from backend.accounts import Accounts
from backend.agents import AgentLibrary
from backend.chats import Chats
from backend.clock import now_ms
from backend.config import Settings
from backend.endpoints import ModelEndpoints
from backend.errors import ChatsError
from backend.runtime import DEFAULT_MAX_STATE_BYTES, ChatRuntime
from backend.runtime.hosting import apply_storage_settings, lock_store_from_settings
from backend.runtime.library_agents import LibraryAgents

P = ParamSpec("P")
R = TypeVar("R")

logger = logging.getLogger(__name__)

ARCHIVE_PASS_INTERVAL_S = 3600.0
"""How often open directories apply "archive chats untouched for N days" (also at open)."""


async def offload(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run a blocking backend call on a worker thread."""
    return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))


class Services:
    """Lazily opened directories and runtimes, keyed by user id."""

    def __init__(self, settings: Settings, *, clock: Callable[[], int] = now_ms) -> None:
        self.settings = settings
        self._clock = clock
        apply_storage_settings(settings)  # before any database of this process opens
        self._lock = threading.Lock()
        self._directories: dict[str, Chats] = {}
        self._runtimes: dict[str, ChatRuntime] = {}
        self._libraries: dict[str, AgentLibrary] = {}
        self._endpoints: ModelEndpoints | None = None
        # The session-state ceiling of every chat: the runtimes enforce it, the panel shows it.
        self.max_state_bytes = DEFAULT_MAX_STATE_BYTES
        self._on_directory_opened: list[Callable[[str, Chats], Any]] = []
        self._on_conversation_opened: list[Callable[[str, str, str], Any]] = []
        self._on_agent_saved: list[Callable[[str, str], Any]] = []
        self._accounts: Accounts | None = None

    def accounts(self) -> Accounts:
        """The accounts database of this data folder (opened on first use, then shared)."""
        with self._lock:
            if self._accounts is None:
                self.settings.data_dir.mkdir(parents=True, exist_ok=True)
                self._accounts = Accounts(self.settings)
            return self._accounts

    def endpoints(self) -> ModelEndpoints:
        """The model endpoints of this server (one per process: it caches listings, clients)."""
        accounts = self.accounts()
        with self._lock:
            if self._endpoints is None:
                self._endpoints = ModelEndpoints(self.settings, accounts)
            return self._endpoints

    def agents(self, user_id: str) -> AgentLibrary:
        """The user's agent library, in their directory database."""
        chats = self.directory(user_id)
        endpoints = self.endpoints()
        with self._lock:
            library = self._libraries.get(user_id)
            if library is None:
                library = AgentLibrary(chats.database, check_model=endpoints.check_model)
                self._libraries[user_id] = library
            return library

    def directory(self, user_id: str) -> Chats:
        with self._lock:
            chats = self._directories.get(user_id)
            if chats is None:
                self.settings.data_dir.mkdir(parents=True, exist_ok=True)
                chats = Chats(
                    self.settings.data_dir,
                    user_id,
                    soft_delete_window_s=self.settings.soft_delete_window_s,
                    clock=self._clock,
                )
                self._directories[user_id] = chats
                opened = True
            else:
                opened = False
        if opened:
            for callback in self._on_directory_opened:
                callback(user_id, chats)
        return chats

    def runtime(self, user_id: str) -> ChatRuntime:
        chats = self.directory(user_id)
        endpoints = self.endpoints()
        library = self.agents(user_id)
        with self._lock:
            runtime = self._runtimes.get(user_id)
            if runtime is None:
                runtime = ChatRuntime(
                    self.settings,
                    chats,
                    models=endpoints,
                    agents=LibraryAgents(library),
                    lock_store=lock_store_from_settings(self.settings),
                    max_state_bytes=self.max_state_bytes,
                )
                self._runtimes[user_id] = runtime
            return runtime

    def archive_untouched(self) -> int:
        """One pass of the archive policy of every directory open here; how many it archived.

        A directory runs a pass when it opens (at sign-in); this covers the people who stay.
        """
        with self._lock:
            directories = list(self._directories.values())
        archived = 0
        for chats in directories:
            try:
                archived += len(chats.archive_untouched())
            except ChatsError:  # closed meanwhile, or its file is busy: the next pass retries
                logger.warning("archive pass failed for %s", chats.directory_id, exc_info=True)
        return archived

    async def archive_untouched_periodically(
        self, interval_s: float = ARCHIVE_PASS_INTERVAL_S
    ) -> None:
        """Run :meth:`archive_untouched` every ``interval_s`` until cancelled (server stop)."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await offload(self.archive_untouched)
            except Exception:  # the task must outlive one bad pass
                logger.warning("archive pass failed", exc_info=True)

    async def shutdown(self) -> None:
        """Server stopping (SIGTERM): every streaming reply is saved and marked interrupted."""
        with self._lock:
            runtimes = list(self._runtimes.values())
        await asyncio.gather(*(runtime.shutdown() for runtime in runtimes), return_exceptions=True)

    def on_directory_opened(self, callback: Callable[[str, Chats], Any]) -> None:
        self._on_directory_opened.append(callback)

    def conversation_opened(self, user_id: str, chat_id: str, client_token: str) -> None:
        """Tab ``client_token`` shows ``chat_id``: the bridge, which pushes its updates, hears it.

        A hook rather than a call into the bridge, so the states that report it never import
        the module that imports them.
        """
        for callback in self._on_conversation_opened:
            callback(user_id, chat_id, client_token)

    def on_conversation_opened(self, callback: Callable[[str, str, str], Any]) -> None:
        self._on_conversation_opened.append(callback)

    def agent_saved(self, user_id: str, agent_id: str) -> None:
        """A new version of ``agent_id`` was saved: the headers of chats bound to it update
        (the bridge hears it, as it hears :meth:`conversation_opened`)."""
        for callback in self._on_agent_saved:
            callback(user_id, agent_id)

    def on_agent_saved(self, callback: Callable[[str, str], Any]) -> None:
        self._on_agent_saved.append(callback)


_services: Services | None = None
_services_lock = threading.Lock()


def services() -> Services:
    global _services
    with _services_lock:
        if _services is None:
            _services = Services(Settings.from_env())
        return _services
