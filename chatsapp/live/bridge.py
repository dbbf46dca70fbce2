"""Pushes backend changes into the shared states, so every linked tab sees them live.

One :class:`LiveBridge` per worker process, built by the app module with the app, the shared
states it writes into and the process's :class:`~chatsapp.services.Services`, which it listens
to (a directory opened, a tab opened a chat or linked a person's lists, an agent saved). The
states never import it, so no import cycle forms between the states and the bridge.

Two sources feed it, both inside this worker process:

* the directory's change feed (``Chats.subscribe``: created, renamed, deleted, turn recorded,
  archived, unarchived, shared context changed). Listeners may fire on a worker thread, so
  they only *schedule* work on the event loop. Refreshes are throttled per user and list (the
  sidebar page, memory): the first change refreshes at once, later ones within
  ``directory_refresh_s`` coalesce into one refresh at its end, so an import creating
  thousands of chats costs one sidebar frame per interval (a frame per chat kept the loop
  busy and slowed the import's thread many times over). The sidebar page (chats and, when
  archived chats changed, the archived list) is one backend call (``Chats.sidebar_page``).
* the person's projects (``Projects.subscribe``: a project created, renamed, deleted, a chat
  moved, a file added) and every directory event, since a project's group lists chats too:
  ``SharedProjectsState`` is re-read, throttled as the sidebar is. Another process's changes
  (the ``chats projects`` CLI, another worker) reach it as the directory watcher's events.
* the runtime's run events for a chat (``ChatRuntime.subscribe``): one run pump per watched
  chat applies them to ``SharedConversationState`` (:mod:`chatsapp.live.run_pump`); a flush
  of only the reply's newest text is a frame sent to the tabs each process's bridge says show
  the chat (:mod:`chatsapp.live.text_frames`, which it reads from :meth:`LiveBridge.tabs_watching`).

Pumps are bounded by the tabs that watch: each tab (client token) watches at most one chat, and
when the last tab of a chat leaves (opens another chat, or its socket disconnects) the pump is
cancelled after ``release_grace_s`` (a reload does not thrash it). Cancelling closes the
``subscribe()`` iterator, which lets the runtime release the chat's event log. A tab that comes
back starts a new pump, which resets the transient run fields and rebuilds them from the log.
A tab's events handled after its socket closed count for nothing (:mod:`chatsapp.live.tab_sockets`).

People are bounded the same way: the bridge knows each person's connected tabs (a tab counts
once it links their lists or opens a chat). ``directory_grace_s`` after their last tab left,
``Services.release_idle`` closes their directory, runtime and library (its SQLite handles
and change-watcher thread), unless a run or a background job still uses them, in which case
it asks again after another grace period. Whatever opens the directory again (a tab, an
export) opens it afresh, and the bridge subscribes to that new directory's change feed.

Updates are written on the *shared* token by :func:`chatsapp.live.fanout.shared_change`, from
detached tasks (never from inside an event handler: that deadlocks the state manager), which
resolves each change once and sends it to every linked tab — across workers too when
``REFLEX_REDIS_URL`` is set. (Reflex's own fan-out redid the whole work for each tab.)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import reflex as rx

from backend.chats import (
    ChatArchived,
    ChatCreated,
    ChatDeleted,
    ChatRenamed,
    ChatRestored,
    Chats,
    ChatTurnRecorded,
    ChatUnarchived,
    DirectoryChanged,
    DirectoryEvent,
    SharedContextChanged,
)
from chatsapp.auth.identity import conversation_token, directory_token
from chatsapp.live.chat_headers import ChatHeaders
from chatsapp.live.fanout import ForgetEarlierSharedChanges, lean_fan_out, shared_change
from chatsapp.live.person_releases import DIRECTORY_GRACE_S, PersonReleases
from chatsapp.live.run_pump import RunPump
from chatsapp.live.tab_sockets import TabSockets
from chatsapp.live.text_frames import TextFrames
from chatsapp.reflex_seam import ReflexApp, release_link_locks_of_a_cancelled_event
from chatsapp.services import Services, offload

log = logging.getLogger(__name__)

RELEASE_GRACE_S = 5.0
"""How long a chat's pump outlives the last tab that showed it (a reload does not thrash it)."""
DIRECTORY_REFRESH_S = 0.5
"""At most one sidebar (or shared memory) refresh per user per this interval, after the first."""

Key = tuple[str, str]  # (user id, chat id)
# Events that may change the archived list whatever chat they name (``DirectoryChanged``:
# another process did something the rows do not tell).
_ARCHIVE_EVENTS = (ChatArchived, ChatUnarchived, ChatDeleted, DirectoryChanged)
# Row events: they carry the chat's row as it is after the change.
_ROW_EVENTS = (
    ChatCreated,
    ChatRenamed,
    ChatRestored,
    ChatTurnRecorded,
    ChatArchived,
    ChatUnarchived,
)


@dataclass(frozen=True)
class LiveStates:
    """The shared states the bridge writes into (each needs the fields and methods it uses)."""

    directory: type[rx.State]  # ``show(page)``: the sidebar page's chats
    memory: type[rx.State]  # ``reload(user_id, touch=False)``: not the person's use
    # ``refresh(user_id)``, ``show_written(written)`` and the run/deletion fields
    conversation: type[rx.State]
    archive: type[rx.State]  # ``show(page)``, ``loaded``: the sidebar page's archived chats
    # A chat's header and context meter: ``refresh(user_id)``, ``chat_id``, ``agent_id``, and
    # ``archived``, ``loaded`` for its archive badge.
    chat_settings: type[rx.State]
    # ``reload(user_id, touch=False)``: the projects, each with its chats (re-read on any
    # change of either)
    projects: type[rx.State] | None = None


class WatchListener(Protocol):
    """Hears which tab watches which chat, and renames (``chatsapp.live.sharing_live``)."""

    def watched(self, client_token: str, key: Key, change: int) -> None: ...

    def chat_renamed(self, owner_id: str, chat_id: str) -> None: ...


def touches_archive(event: DirectoryEvent) -> bool:
    """Whether the archived list may change: a reply or rename of a chat that is not archived
    (nearly every event) leaves it alone, and costs it nothing."""
    if isinstance(event, _ARCHIVE_EVENTS):
        return True
    return isinstance(event, _ROW_EVENTS) and event.chat.archived_at is not None


class LiveBridge(ChatHeaders, PersonReleases):
    """The live layer of one worker process (the module docstring says what it does)."""

    states: LiveStates

    def __init__(self, app: ReflexApp, states: LiveStates, services: Services) -> None:
        self.app = app
        self.states = states
        self.header_state = states.chat_settings
        self.services = services
        self.sockets = TabSockets()
        # A streamed reply's newest text, straight to the tabs each process says show the chat.
        self.text_frames = TextFrames(app, states.conversation, self.tabs_watching)
        self.release_grace_s = RELEASE_GRACE_S
        self.directory_grace_s = DIRECTORY_GRACE_S
        self.directory_refresh_s = DIRECTORY_REFRESH_S
        self._loop: asyncio.AbstractEventLoop | None = None
        # (list, user id) -> changed since its refresh began: "directory" (the sidebar page),
        # "memory" or "projects".
        self._refreshes: dict[tuple[str, str], bool] = {}
        self._archive_changed: set[str] = set()  # users whose next sidebar page lists archived
        self._pumps: dict[Key, asyncio.Task[None]] = {}
        self._watchers: dict[Key, set[str]] = {}  # client tokens watching each chat
        self._tab_watching: dict[str, Key] = {}  # client token -> the chat it shows
        self._releases: dict[Key, asyncio.TimerHandle] = {}
        self._user_tabs: dict[str, set[str]] = {}  # user id -> their connected tabs
        self._tab_user: dict[str, str] = {}  # client token -> its user
        self._directory_releases: dict[str, asyncio.TimerHandle] = {}
        self._watched_directories: dict[str, Chats] = {}  # user id -> directory subscribed to
        self._agent_saves_seen: dict[str, int] = {}  # user id -> versions_saved last read
        self._header_refreshes: dict[Key, bool] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.watch_listener: WatchListener | None = None

    def install(self) -> None:
        """Listen to the services and the app's sockets (called once, by the app module)."""
        self.services.listen(self)
        self.sockets.install(self.app, on_closed=self.tab_left)
        lean_fan_out(self.app)
        self.app.add_middleware(ForgetEarlierSharedChanges())
        # A navigation or a closed tab cancels events: none may keep a shared token locked.
        release_link_locks_of_a_cancelled_event()

    # ── what the services report (``chatsapp.services.LiveListener``) ──

    def conversation_opened(self, user_id: str, chat_id: str, client_token: str) -> None:
        """Tab ``client_token`` shows ``chat_id``: its run events reach the shared state
        (idempotent). The tab stops watching the chat it showed before."""
        if self.sockets.is_closed(client_token):
            return  # handled after its tab closed: nothing would ever release the watch
        self._capture_loop()
        if client_token not in self._tab_user:  # a member's tab is theirs, not the owner's
            self.tab_opened(user_id, client_token)
        key = (user_id, chat_id)
        previous = self._tab_watching.get(client_token)
        if previous is not None and previous != key:
            self._unwatch(client_token, previous)
        self._tab_watching[client_token] = key
        if client_token not in self._watchers.setdefault(key, set()) and self.watch_listener:
            self.watch_listener.watched(client_token, key, +1)
        self._watchers[key].add(client_token)
        pending = self._releases.pop(key, None)
        if pending is not None:
            pending.cancel()
        task = self._pumps.get(key)
        if task is None or task.done():
            self._pumps[key] = self._spawn(self._pump_runs(user_id, chat_id))

    def tab_opened(self, user_id: str, client_token: str) -> None:
        """A tab of ``user_id`` is connected: their directory stays open (idempotent). A tab
        whose socket already closed is not counted."""
        if self.sockets.is_closed(client_token):
            return
        self._capture_loop()
        self._tab_user[client_token] = user_id
        self._user_tabs.setdefault(user_id, set()).add(client_token)
        pending = self._directory_releases.pop(user_id, None)
        if pending is not None:
            pending.cancel()

    def directory_opened(self, user_id: str, chats: Chats) -> None:
        """A directory opened: subscribe to its changes, and release it if no tab of the user
        is connected (an export, a late refresh opened it)."""
        self._capture_loop()
        if self._watched_directories.get(user_id) is not chats:
            self._watched_directories[user_id] = chats
            chats.subscribe(lambda event: self.directory_event(user_id, event))
            if self.states.projects is not None:
                # This process's project changes (another process's: a directory event).
                projects = self.services.projects(user_id)
                projects.subscribe(lambda _event: self.projects_changed(user_id))
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._reopened, user_id)

    def agent_saved(self, user_id: str, agent_id: str) -> None:
        """A new version of ``agent_id``: re-read the header of each watched chat bound to it."""
        self._capture_loop()
        self._refresh_watched_headers(user_id, only_agent=agent_id)

    # ── tabs leaving ────────────────────────────────────────────────

    def tab_left(self, client_token: str) -> None:
        """The tab closed its socket: it no longer watches any chat."""
        self.tab_left_chat(client_token)
        user_id = self._tab_user.pop(client_token, None)
        if user_id is None:
            return
        tabs = self._user_tabs.get(user_id)
        if tabs is not None:
            tabs.discard(client_token)
            if not tabs:
                del self._user_tabs[user_id]
                self._schedule_directory_release(user_id)

    def tab_left_chat(self, client_token: str) -> None:
        """The tab no longer shows the chat it showed (it lost it: ``sharing_live``)."""
        key = self._tab_watching.pop(client_token, None)
        if key is not None:
            self._unwatch(client_token, key)

    def footprint(self) -> dict[str, int]:
        """What the bridge holds now (the soak and load benches print it)."""
        return {
            "pumps": sum(1 for task in self._pumps.values() if not task.done()),
            "watched_chats": len(self._watchers),
            "watching_tabs": len(self._tab_watching),
            "tasks": len(self._tasks),
            "connected_people": len(self._user_tabs),
            "watched_directories": len(self._watched_directories),
            "directory_releases": len(self._directory_releases),
        }

    def watched_chat(self, client_token: str) -> Key | None:
        """The (user, chat) tab ``client_token`` shows, if any."""
        return self._tab_watching.get(client_token)

    def tab_owner(self, client_token: str) -> str | None:
        """The person whose tab ``client_token`` is (not the owner of the chat it shows)."""
        return self._tab_user.get(client_token)

    def tabs_watching(self, key: Key) -> set[str]:
        return set(self._watchers.get(key, ()))

    def has_tabs(self, user_id: str) -> bool:
        return user_id in self._user_tabs

    def people_with_tabs(self) -> list[str]:
        return list(self._user_tabs)

    def serves_anyone(self) -> bool:
        """Whether a tab is connected to this worker (cheap: asked once a second)."""
        return bool(self._user_tabs)

    def pumped_chats(self) -> set[Key]:
        """The chats whose run events are pumped now."""
        return {key for key, task in self._pumps.items() if not task.done()}

    def refreshing(self, kind: str, user_id: str) -> bool:
        """Whether a throttled refresh of list ``kind`` of ``user_id`` is running."""
        return (kind, user_id) in self._refreshes

    def refreshes_running(self) -> int:
        """How many throttled list refreshes are running."""
        return len(self._refreshes)

    def stop(self) -> None:
        """Cancel every pump and task (tests end each case with it)."""
        for task in [*self._pumps.values(), *self._tasks]:
            task.cancel()

    def _unwatch(self, client_token: str, key: Key) -> None:
        tabs = self._watchers.get(key)
        if tabs is None:
            return
        if client_token in tabs and self.watch_listener is not None:
            self.watch_listener.watched(client_token, key, -1)
        tabs.discard(client_token)
        if tabs:
            return
        del self._watchers[key]
        loop = self._loop
        if loop is None or loop.is_closed():
            self._release(key)
        elif key not in self._releases:
            self._releases[key] = loop.call_later(self.release_grace_s, self._release, key)

    def _release(self, key: Key) -> None:
        self._releases.pop(key, None)
        if key in self._watchers:
            return  # a tab came back within the grace period
        task = self._pumps.pop(key, None)
        if task is not None and not task.done():
            task.cancel()  # closes subscribe(): the runtime may release the chat's event log

    # ── directory events ────────────────────────────────────────────

    def directory_event(self, user_id: str, event: DirectoryEvent) -> None:
        """A change of ``user_id``'s directory (on any thread): schedule what it changes."""
        self._capture_loop()  # on a worker thread there is none: the loop captured earlier
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def schedule() -> None:
            if isinstance(event, SharedContextChanged):
                self._request_refresh("memory", user_id)
                return
            if touches_archive(event):
                self._archive_changed.add(user_id)
            self._request_refresh("directory", user_id)
            if self.states.projects is not None:
                # A project's chat changed, or another process changed projects (``changed``).
                self._request_refresh("projects", user_id)
            match event:
                case ChatDeleted(chat_id=chat_id):
                    self._spawn(self._show_deleted(chat_id))
                case ChatRenamed(chat=chat):
                    self._spawn(self._show_title(chat.id, chat.title))
                    if self.watch_listener is not None:
                        self.watch_listener.chat_renamed(user_id, chat.id)
                case ChatArchived(chat=chat) | ChatUnarchived(chat=chat) if (
                    user_id,
                    chat.id,
                ) in self._watchers:
                    # Only chats a tab of this worker shows: the policy may archive thousands.
                    self._spawn(self._apply_archive(chat.id, isinstance(event, ChatArchived)))
            if any(user == user_id for user, _chat in self._watchers):
                self._spawn(self._headers_if_agents_changed(user_id))

        loop.call_soon_threadsafe(schedule)

    def projects_changed(self, user_id: str) -> None:
        """A project of ``user_id`` changed in this process (on any thread): re-read them."""
        self._capture_loop()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._request_refresh, "projects", user_id)

    def _request_refresh(self, kind: str, user_id: str) -> None:
        """Refresh now if idle, else once more when the running refresh's interval ends."""
        key = (kind, user_id)
        running = key in self._refreshes
        self._refreshes[key] = True
        if not running:
            self._spawn(self._refresh_throttled(key))

    async def _refresh_throttled(self, key: tuple[str, str]) -> None:
        kind, user_id = key
        try:
            while self._refreshes.get(key):
                self._refreshes[key] = False
                if not self.services.is_open(user_id):
                    break  # released meanwhile: opening it again asks for a refresh
                try:
                    if kind == "directory":
                        await self._refresh_sidebar(user_id)
                    else:
                        shown = self.states.projects if kind == "projects" else None
                        token = directory_token(user_id)
                        async with self._modify(token, shown or self.states.memory) as state:
                            await state.reload(user_id, touch=False)
                except Exception:  # the next change (or interval) tries again
                    log.warning("%s refresh failed", kind, exc_info=True)
                await asyncio.sleep(self.directory_refresh_s)
        finally:
            self._refreshes.pop(key, None)

    async def _refresh_sidebar(self, user_id: str) -> None:
        """The sidebar page in one backend call, shown in the chat list and, when archived
        chats changed and a tab of the user has shown that section, in the archived list."""
        token = directory_token(user_id)
        with_archived = user_id in self._archive_changed
        self._archive_changed.discard(user_id)
        if with_archived:
            async with self._modify(token, self.states.archive) as archived:
                with_archived = archived.loaded  # read only once a tab has shown it
        chats = self.services.directory(user_id, touch=False)
        page = await offload(chats.sidebar_page, with_archived=with_archived)
        async with self._modify(token, self.states.directory) as sidebar:
            sidebar.show(page)
        if page.archived is not None:
            async with self._modify(token, self.states.archive) as archived:
                archived.show(page)

    async def _show_deleted(self, chat_id: str) -> None:
        async with self._modify(conversation_token(chat_id), self.states.conversation) as state:
            state.deleted = True
            state.loaded = False

    async def _show_title(self, chat_id: str, title: str) -> None:
        """The event carries the row as renamed: nothing is read again."""
        if title:
            async with self._modify(conversation_token(chat_id), self.states.conversation) as state:
                state.title = title

    async def _apply_archive(self, chat_id: str, archived: bool) -> None:
        token = conversation_token(chat_id)
        async with self._modify(token, self.states.chat_settings) as header:
            if header.loaded and header.archived != archived:
                header.archived = archived

    # ── run events ──────────────────────────────────────────────────

    async def _pump_runs(self, user_id: str, chat_id: str) -> None:
        runtime = self.services.runtime(user_id)
        pump = RunPump(
            self.app, self.states.conversation, runtime, self.text_frames, user_id, chat_id
        )
        async for _settings_may_change in pump.run():
            self._request_header_refresh(user_id, chat_id)

    # ── plumbing ────────────────────────────────────────────────────

    def _modify(
        self, token: str, state_cls: type[rx.State]
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        return shared_change(self.app, token, state_cls)

    def _capture_loop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        # A fresh context: a task started from inside an event must not carry that event's
        # viewer (chatsapp.states.linking tells the linking event apart by it).
        task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("bridge task failed", exc_info=task.exception())
