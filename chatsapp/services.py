"""Process-wide backend objects the UI talks to: settings, directories, the runtime.

Reflex states are per tab and serialisable, so they hold ids and rendered values only; the
live objects (open SQLite files, running runs) live here, one set per worker process. The
storage core is synchronous: callers go through :func:`offload` so a SQLite call never stalls
the event loop that serves every tab of this worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from backend.accounts import Accounts
from backend.agents import AgentLibrary
from backend.chats import ChatPurged, Chats, DirectoryEvent
from backend.chats.meaning_workers import EmbedderFactory, MeaningWorkers, embedder_of
from backend.clock import now_ms
from backend.config import Settings
from backend.endpoints import ModelEndpoints
from backend.errors import ChatsError
from backend.projects import Projects
from backend.runtime import DEFAULT_MAX_STATE_BYTES, ChatRuntime
from backend.runtime.hosting import (
    apply_storage_settings,
    check_storage,
    lock_store_from_settings,
)
from backend.runtime.library_agents import LibraryAgents
from backend.sharing import ChatRef, Sharing

if TYPE_CHECKING:  # its module imports numpy: a serving process pays on first use only
    from backend.chats.meaning_search import MeaningSearch

P = ParamSpec("P")
R = TypeVar("R")

logger = logging.getLogger(__name__)

ARCHIVE_PASS_INTERVAL_S = 3600.0
"""How often open directories apply "archive chats untouched for N days" (also at open)."""
CHAT_FILE_IDLE_S = 60.0
"""A chat file nothing holds is closed once unused this long (a tab's chat is held)."""
CHAT_FILE_PASS_INTERVAL_S = 30.0


class Release(enum.Enum):
    """What :meth:`Services.release_idle` did with a person's open objects."""

    RELEASED = "released"
    BUSY = "busy"  # a run, a background job or a recent call uses them: ask again later
    NOT_OPEN = "not open"


async def offload(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run a blocking backend call on a worker thread."""
    return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))


class LiveListener(Protocol):
    """What the live bridge hears from the services (the states report through them)."""

    def directory_opened(self, user_id: str, chats: Chats) -> None: ...

    def conversation_opened(self, user_id: str, chat_id: str, client_token: str) -> None: ...

    def tab_opened(self, user_id: str, client_token: str) -> None: ...

    def agent_saved(self, user_id: str, agent_id: str) -> None: ...


class Services:
    """Lazily opened directories and runtimes, keyed by user id."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], int] = now_ms,
        embedder: EmbedderFactory | None = None,
    ) -> None:
        """``embedder``: what search by meaning embeds with (default: ``CHATS_EMBEDDER``)."""
        self.settings = settings
        self._clock = clock
        check_storage(settings)  # PostgreSQL unreachable: refused at start, naming the server
        apply_storage_settings(settings)  # before any database of this process opens
        self._lock = threading.Lock()
        self._directories: dict[str, Chats] = {}
        self._runtimes: dict[str, ChatRuntime] = {}
        self._libraries: dict[str, AgentLibrary] = {}
        self._projects: dict[str, Projects] = {}
        # user id -> monotonic time of the person's last use (orders who is released first)
        self._last_used: dict[str, float] = {}
        # user id -> monotonic time of the last call of anyone (a handler may still hold it)
        self._last_fetched: dict[str, float] = {}
        self._holds: dict[str, int] = {}  # user id -> background jobs using the directory
        self._endpoints: ModelEndpoints | None = None
        # The session-state ceiling of every chat: the runtimes enforce it, the panel shows it.
        self.max_state_bytes = DEFAULT_MAX_STATE_BYTES
        self._live: LiveListener | None = None
        self._accounts: Accounts | None = None
        self._sharing: Sharing | None = None
        self._meaning = MeaningWorkers(embedder or embedder_of(settings))

    def meaning(self, user_id: str) -> MeaningSearch | None:
        """The user's search by meaning (its worker started on first use; the model loads on
        the first embedding); None when ``CHATS_EMBEDDER`` is off."""
        return self._meaning.of(self.directory(user_id))

    def accounts(self) -> Accounts:
        """The accounts database (opened on first use, then shared)."""
        with self._lock:
            if self._accounts is None:
                self._accounts = Accounts(self.settings)
            return self._accounts

    def sharing(self) -> Sharing:
        """Who may do what in a shared chat, and share links (one per process, on first use)."""
        accounts = self.accounts()
        with self._lock:
            if self._sharing is None:
                self._sharing = Sharing(self.settings, accounts)
            return self._sharing

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

    def projects(self, user_id: str, *, touch: bool = True) -> Projects:
        """The user's projects, in their directory database (``touch``: see :meth:`directory`)."""
        chats = self.directory(user_id, touch=touch)
        with self._lock:
            found = self._projects.get(user_id)
            if found is None:
                found = Projects(chats, soft_delete_window_s=self.settings.soft_delete_window_s)
                self._projects[user_id] = found
            return found

    def directory(self, user_id: str, *, touch: bool = True) -> Chats:
        """The user's directory, opened again if it was released (see :meth:`release_idle`).

        ``touch=False`` is for the live bridge's own reads (a sidebar refresh): they are not
        the person's use, so they never make someone without a tab the most recently used,
        and a directory such a read opens again is the first to be released.
        """
        # What the opening sweep purges is heard under our lock: kept, and handled after it.
        swept: list[DirectoryEvent] = []
        opening = True

        def heard_while_opening(event: DirectoryEvent) -> None:
            if opening:
                swept.append(event)

        with self._lock:
            now = time.monotonic()
            self._last_fetched[user_id] = now
            if touch:
                self._last_used[user_id] = now
            chats = self._directories.get(user_id)
            if chats is None:
                if not self.settings.on_postgresql:  # there, the root names scopes only
                    self.settings.data_dir.mkdir(parents=True, exist_ok=True)
                chats = Chats(
                    self.settings.storage_root,
                    user_id,
                    soft_delete_window_s=self.settings.soft_delete_window_s,
                    clock=self._clock,
                    storage=self.settings.storage,
                    temporary_lifetime_s=self.settings.temporary_chat_ttl_s,
                    temporary_grace_s=self.settings.temporary_chat_grace_s,
                    listeners=[heard_while_opening],
                )
                opening = False
                self._directories[user_id] = chats
                chats.subscribe(functools.partial(self._chat_purged, user_id))
                opened = True
            else:
                opened = False
        for event in swept:  # the chats the sweep purged end their shares too
            self._chat_purged(user_id, event)
        if opened and self._live is not None:
            self._live.directory_opened(user_id, chats)
        return chats

    def _chat_purged(self, owner_id: str, event: DirectoryEvent) -> None:
        """A chat of ``owner_id``'s is gone for good: if it was shared, its memberships, links
        and switch end, and its members' tabs and "Shared with me" hear it from the sharing
        feed (``chat_ended``). On the purging thread, after its commit."""
        if isinstance(event, ChatPurged):
            self.sharing().chat_ended(ChatRef(owner_id=owner_id, chat_id=event.chat_id))

    def runtime(self, user_id: str) -> ChatRuntime:
        chats = self.directory(user_id)
        endpoints = self.endpoints()
        library = self.agents(user_id)
        # A shared chat's members and its owner-context switch, read per call.
        hooks = self.sharing().run_hooks(user_id)
        projects = self.projects(user_id)
        with self._lock:
            runtime = self._runtimes.get(user_id)
        owner = None if runtime is not None else self.accounts().user(user_id)
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
                    owner_name=owner.username if owner is not None else None,
                    participants=hooks.participants,
                    owner_context=hooks.owner_context,
                    projects=projects.turns,
                    meaning=lambda: self.meaning(user_id),  # started on the tool's first call
                )
                self._runtimes[user_id] = runtime
            return runtime

    @contextlib.contextmanager
    def hold(self, user_id: str) -> Iterator[Chats]:
        """The user's directory, kept open until the block ends (a background job: an import)."""
        with self._lock:
            self._holds[user_id] = self._holds.get(user_id, 0) + 1
        try:
            yield self.directory(user_id)
        finally:
            self._let_go([user_id])

    def _let_go(self, user_ids: list[str]) -> None:
        with self._lock:
            for user_id in user_ids:
                left = self._holds.get(user_id, 0) - 1
                if left > 0:
                    self._holds[user_id] = left
                else:
                    self._holds.pop(user_id, None)

    async def release_idle(self, user_id: str, idle_s: float) -> Release:
        """Close the user's directory, runtime and library if nothing uses them.

        Kept while a run of theirs is queued or streaming (the reply must be saved), while a
        background job holds the directory, and for ``idle_s`` after the last call that
        fetched one of them (a handler may still be using what it fetched). The host calls
        this once none of the user's tabs is connected; the next call opens them afresh.
        The check and the removal happen under the lock with no await between them, so a
        caller gets either the open objects or new ones, never closed ones.
        """
        with self._lock:
            chats = self._directories.get(user_id)
            if chats is None:
                return Release.NOT_OPEN
            runtime = self._runtimes.get(user_id)
            recent = time.monotonic() - self._last_fetched.get(user_id, 0.0) < idle_s
            running = runtime is not None and runtime.footprint().busy_chats > 0
            if recent or running or self._holds.get(user_id):
                return Release.BUSY
            del self._directories[user_id]
            self._runtimes.pop(user_id, None)
            self._libraries.pop(user_id, None)
            self._projects.pop(user_id, None)
            self._last_used.pop(user_id, None)
            self._last_fetched.pop(user_id, None)
        if runtime is not None:
            await runtime.release()
        await offload(self._meaning.forget, chats)
        await offload(chats.close)
        return Release.RELEASED

    def is_open(self, user_id: str) -> bool:
        """Whether the user's directory is open here (a refresh of a released one waits)."""
        with self._lock:
            return user_id in self._directories

    def people_by_last_use(self) -> list[str]:
        """The people whose directory is open here, least recently used first."""
        with self._lock:
            return sorted(self._directories, key=lambda user_id: self._last_used.get(user_id, 0))

    def footprint(self) -> dict[str, int]:
        """The people whose objects are open here (the soak bench prints it)."""
        with self._lock:
            return {
                "directories": len(self._directories),
                "runtimes": len(self._runtimes),
                "libraries": len(self._libraries),
                "held": len(self._holds),
            }

    def archive_untouched(self) -> int:
        """One pass of the archive policy of every directory open here; how many it archived.

        A directory runs a pass when it opens (at sign-in); this covers the people who stay.
        """
        return self._each_open_directory(
            "archive pass", lambda chats: len(chats.archive_untouched())
        )

    async def close_idle_chat_files(self, idle_s: float = CHAT_FILE_IDLE_S) -> int:
        """Close the chat files nothing has used for ``idle_s``, of every person open here;
        how many closed. The runtimes first let go of the chats no tab watches (a chat a tab
        shows stays open), then each directory closes the files nobody holds."""
        with self._lock:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            runtime.release_unused_chats(idle_s)
        return await offload(
            self._each_open_directory,
            "closing idle chat files",
            lambda chats: chats.close_idle_chats(idle_s),
        )

    def _each_open_directory(self, name: str, work: Callable[[Chats], int]) -> int:
        """``work`` on every directory open here, the sum of what it returns. Each directory
        is held meanwhile, so a release waits for the pass."""
        with self._lock:
            open_now = list(self._directories.items())
            for user_id, _chats in open_now:
                self._holds[user_id] = self._holds.get(user_id, 0) + 1
        total = 0
        try:
            for _user_id, chats in open_now:
                try:
                    total += work(chats)
                except ChatsError:  # its file is busy: the next pass retries
                    logger.warning("%s failed for %s", name, chats.directory_id, exc_info=True)
        finally:
            self._let_go([user_id for user_id, _chats in open_now])
        return total

    async def archive_untouched_periodically(
        self, interval_s: float = ARCHIVE_PASS_INTERVAL_S
    ) -> None:
        """Run :meth:`archive_untouched` every ``interval_s`` until cancelled (server stop)."""
        await _periodically(interval_s, lambda: offload(self.archive_untouched), "archive pass")

    async def close_idle_chat_files_periodically(
        self, interval_s: float = CHAT_FILE_PASS_INTERVAL_S
    ) -> None:
        """Run :meth:`close_idle_chat_files` every ``interval_s`` until cancelled."""
        await _periodically(interval_s, self.close_idle_chat_files, "closing idle chat files")

    async def shutdown(self) -> None:
        """Server stopping (SIGTERM): every streaming reply is saved and marked interrupted."""
        with self._lock:
            runtimes = list(self._runtimes.values())
        await asyncio.gather(*(runtime.shutdown() for runtime in runtimes), return_exceptions=True)

    async def aclose(self) -> None:
        """Close everything open here: runtimes (as :meth:`shutdown`), directories, endpoints,
        accounts; on PostgreSQL the process's pool closes with its last user. For a host that
        stops one Services and keeps running (tests, tools); the app's worker just exits."""
        await self.shutdown()
        with self._lock:
            directories = list(self._directories.values())
            endpoints, accounts = self._endpoints, self._accounts
            self._directories.clear()
            self._runtimes.clear()
            self._libraries.clear()
            self._endpoints = self._accounts = None
        await offload(self._meaning.close)
        for chats in directories:
            await offload(chats.close)
        if endpoints is not None:
            endpoints.close()
        if accounts is not None:
            accounts.close()

    def listen(self, live: LiveListener) -> None:
        """``live`` (the app's live bridge) hears what the states report from now on."""
        self._live = live

    def conversation_opened(self, user_id: str, chat_id: str, client_token: str) -> None:
        """Tab ``client_token`` shows ``chat_id``: the bridge, which pushes its updates, hears it.

        Through this object rather than a call into the bridge, so the states that report it
        never import the module that imports them.
        """
        if self._live is not None:
            self._live.conversation_opened(user_id, chat_id, client_token)

    def tab_opened(self, user_id: str, client_token: str) -> None:
        """Tab ``client_token`` of ``user_id`` is connected (it linked their lists): the bridge
        keeps their directory open until their last tab leaves."""
        if self._live is not None:
            self._live.tab_opened(user_id, client_token)

    def agent_saved(self, user_id: str, agent_id: str) -> None:
        """A new version of ``agent_id`` was saved: the headers of chats bound to it update
        (the bridge hears it, as it hears :meth:`conversation_opened`)."""
        if self._live is not None:
            self._live.agent_saved(user_id, agent_id)


_services: Services | None = None
_services_lock = threading.Lock()


async def _periodically(interval_s: float, work: Callable[[], Awaitable[Any]], name: str) -> None:
    """``await work()`` every ``interval_s`` until cancelled; a failed pass is logged."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            await work()
        except Exception:  # the task must outlive one bad pass
            logger.warning("%s failed", name, exc_info=True)


def services() -> Services:
    global _services
    with _services_lock:
        if _services is None:
            _services = Services(Settings.from_env())
        return _services
