"""Pushes backend changes into the shared states, so every linked tab sees them live.

Two sources feed it, both inside this worker process:

* the directory's change feed (``Chats.subscribe``): created / renamed / deleted / turn
  recorded / archived / unarchived / shared context changed. Listeners may fire on a worker
  thread (storage calls are offloaded), so they only *schedule* work on the event loop.
  Refreshes are throttled per user and list (sidebar, archived, memory): the first change
  refreshes at once, later ones within ``DIRECTORY_REFRESH_S`` coalesce into one refresh at its
  end. An import creating thousands of chats so costs a sidebar frame per interval to each tab,
  not one per chat (each one kept the event loop busy, and a busy loop slows the import's
  worker thread many times over: it waits for the GIL after every SQLite call).
* the runtime's run events for a chat (``ChatRuntime.subscribe``): one pump task per watched
  chat applies them to ``SharedConversationState`` (:mod:`chatsapp.live.run_pump`).

Pumps are bounded by the tabs that watch: each tab (client token) watches at most one chat, and
when the last tab of a chat leaves (opens another chat, or its socket disconnects) the pump is
cancelled after ``RELEASE_GRACE_S`` (a reload does not thrash it). Cancelling closes the
``subscribe()`` iterator, which lets the runtime release the chat's event log. A tab that comes
back starts a new pump, which resets the transient run fields and rebuilds them from the log.
A tab's events handled after its socket closed count for nothing (:mod:`chatsapp.live.tab_sockets`).

People are bounded the same way: the bridge knows each person's connected tabs (a tab counts
once it links their lists or opens a chat). ``DIRECTORY_GRACE_S`` after their last tab left,
``Services.release_idle`` closes their directory, runtime and library (its SQLite handles
and change-watcher thread), unless a run or a background job still uses them, in which case
it asks again after another grace period. Whatever opens the directory again (a tab, an
export) opens it afresh, and the bridge subscribes to that new directory's change feed.

Updates are written on the *shared* token by :func:`chatsapp.live.fanout.shared_change`, from
detached tasks (never from inside an event handler: that deadlocks the state manager), which
resolves each change once and sends it to every linked tab — across workers too when
``REFLEX_REDIS_URL`` is set. (Reflex's own fan-out redid the whole work for each tab.)

The app module installs the bridge and hands it the state classes it writes into; the states
never import it (they announce an opened chat through ``Services.conversation_opened``), so
no import cycle forms between the states and the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import reflex as rx

from chatsapp.auth.identity import conversation_token, directory_token
from chatsapp.live import tab_sockets
from chatsapp.live.fanout import ForgetEarlierSharedChanges, lean_fan_out, shared_change
from chatsapp.live.run_pump import pump_runs
from chatsapp.services import Release, offload, services

log = logging.getLogger(__name__)

RELEASE_GRACE_S = 5.0
DIRECTORY_GRACE_S = 60.0
"""How long a person's directory and runtime stay open after their last tab left."""
MAX_OPEN_PEOPLE = 256
"""Past this many open directories, people with no tab connected are released at once,
least recently used first, if unused for ``LRU_MIN_IDLE_S`` (a burst of sign-ins)."""
LRU_MIN_IDLE_S = 1.0
DIRECTORY_REFRESH_S = 0.5
"""At most one sidebar (or shared memory) refresh per user per this interval, after the first."""

Key = tuple[str, str]  # (user id, chat id)


@dataclass(frozen=True)
class LiveStates:
    """The shared states the bridge writes into (each needs the fields and methods it uses)."""

    directory: type[rx.State]  # ``reload(user_id)``
    memory: type[rx.State]  # ``reload(user_id)``
    conversation: type[rx.State]  # ``refresh(user_id)`` and the run/deletion fields
    archive: type[rx.State]  # ``reload(user_id)``, ``loaded``: the archived chats
    # A chat's header and context meter: ``refresh(user_id)``, ``chat_id``, ``agent_id``, and
    # ``archived``, ``loaded`` for its archive badge.
    chat_settings: type[rx.State]


_targets: LiveStates | None = None
_app: Any = None
_loop: asyncio.AbstractEventLoop | None = None
# (list, user id) -> changed since its refresh began; list is a LiveStates field name.
_refreshes: dict[tuple[str, str], bool] = {}
# Events that may change the archived list whatever chat they name ("changed": another
# process did something the rows do not tell).
_ARCHIVE_KINDS = frozenset(("archived", "unarchived", "deleted", "changed"))
_pumps: dict[Key, asyncio.Task] = {}
_watchers: dict[Key, set[str]] = {}  # client tokens watching each chat
_tab_watching: dict[str, Key] = {}  # client token -> the chat it shows
_releases: dict[Key, asyncio.TimerHandle] = {}
_user_tabs: dict[str, set[str]] = {}  # user id -> their connected tabs (client tokens)
_tab_user: dict[str, str] = {}  # client token -> its user
_directory_releases: dict[str, asyncio.TimerHandle] = {}
_watched_directories: dict[str, Any] = {}  # user id -> the directory object subscribed to
_agent_saves_seen: dict[str, int] = {}  # user id -> AgentLibrary.versions_saved last read
_tasks: set[asyncio.Task] = set()


def install(app: Any, states: LiveStates) -> None:
    """Called once, by the app module, with the shared states to keep live."""
    global _app, _targets
    _app, _targets = app, states
    services().on_directory_opened(_watch_directory)
    services().on_conversation_opened(watch_conversation)
    services().on_tab_opened(tab_joined)
    services().on_agent_saved(_agent_saved)
    tab_sockets.install(app, on_closed=tab_left)
    lean_fan_out(app)
    app.add_middleware(ForgetEarlierSharedChanges())


def watch_conversation(user_id: str, chat_id: str, client_token: str) -> None:
    """Tab ``client_token`` shows ``chat_id``: its run events reach the shared state (idempotent).

    Registered with ``Services.on_conversation_opened``: runs when a tab opens the chat. The
    tab stops watching the chat it showed before.
    """
    if tab_sockets.is_closed(client_token):
        return  # handled after its tab closed: nothing would ever release the watch
    _capture_loop()
    tab_joined(user_id, client_token)
    key = (user_id, chat_id)
    previous = _tab_watching.get(client_token)
    if previous is not None and previous != key:
        _unwatch(client_token, previous)
    _tab_watching[client_token] = key
    _watchers.setdefault(key, set()).add(client_token)
    pending = _releases.pop(key, None)
    if pending is not None:
        pending.cancel()
    task = _pumps.get(key)
    if task is None or task.done():
        _pumps[key] = _spawn(_pump_runs(user_id, chat_id))


def tab_joined(user_id: str, client_token: str) -> None:
    """A tab of ``user_id`` is connected: their directory stays open (idempotent).

    Registered with ``Services.on_tab_opened`` (a tab linking the user's lists) and called
    when a tab opens a chat. A tab whose socket already closed is not counted.
    """
    if tab_sockets.is_closed(client_token):
        return
    _capture_loop()
    _tab_user[client_token] = user_id
    _user_tabs.setdefault(user_id, set()).add(client_token)
    pending = _directory_releases.pop(user_id, None)
    if pending is not None:
        pending.cancel()


def tab_left(client_token: str) -> None:
    """The tab closed its socket: it no longer watches any chat."""
    key = _tab_watching.pop(client_token, None)
    if key is not None:
        _unwatch(client_token, key)
    user_id = _tab_user.pop(client_token, None)
    if user_id is None:
        return
    tabs = _user_tabs.get(user_id)
    if tabs is not None:
        tabs.discard(client_token)
        if not tabs:
            del _user_tabs[user_id]
            _schedule_directory_release(user_id)


def footprint() -> dict[str, int]:
    """What the bridge holds now (the soak and load benches print it)."""
    return {
        "pumps": sum(1 for task in _pumps.values() if not task.done()),
        "watched_chats": len(_watchers),
        "watching_tabs": len(_tab_watching),
        "tasks": len(_tasks),
        "connected_people": len(_user_tabs),
        "watched_directories": len(_watched_directories),
        "directory_releases": len(_directory_releases),
    }


def _unwatch(client_token: str, key: Key) -> None:
    tabs = _watchers.get(key)
    if tabs is None:
        return
    tabs.discard(client_token)
    if tabs:
        return
    del _watchers[key]
    loop = _loop
    if loop is None or loop.is_closed():
        _release(key)
    elif key not in _releases:
        _releases[key] = loop.call_later(RELEASE_GRACE_S, _release, key)


def _release(key: Key) -> None:
    _releases.pop(key, None)
    if key in _watchers:
        return  # a tab came back within the grace period
    task = _pumps.pop(key, None)
    if task is not None and not task.done():
        task.cancel()  # closes subscribe(): the runtime may release the chat's event log


# ── releasing a person's directory ──────────────────────────────────


def _schedule_directory_release(user_id: str) -> None:
    """Ask :func:`_release_directory` in ``DIRECTORY_GRACE_S`` (on the loop; idempotent)."""
    loop = _loop
    if loop is None or loop.is_closed() or user_id in _directory_releases:
        return
    _directory_releases[user_id] = loop.call_later(DIRECTORY_GRACE_S, _release_directory, user_id)


def _release_directory(user_id: str) -> None:
    _directory_releases.pop(user_id, None)
    if user_id in _user_tabs:
        return  # a tab came back within the grace period
    if any(user == user_id and not task.done() for (user, _chat), task in _pumps.items()):
        _schedule_directory_release(user_id)  # a pump's own grace has not ended yet
        return
    _spawn(_close_directory(user_id, DIRECTORY_GRACE_S))


async def _close_directory(user_id: str, idle_s: float) -> None:
    watched = _watched_directories.get(user_id)
    outcome = await services().release_idle(user_id, idle_s)
    if outcome is Release.BUSY:
        if user_id not in _user_tabs:
            _schedule_directory_release(user_id)
        return
    # Forget the subscription only if it was to the closed directory (a new one may be open).
    if watched is not None and watched.closed and _watched_directories.get(user_id) is watched:
        del _watched_directories[user_id]
        _agent_saves_seen.pop(user_id, None)


# ── directory events ────────────────────────────────────────────────


def _watch_directory(user_id: str, chats: Any) -> None:
    """A directory opened: subscribe to its changes, and release it if no tab of the user is
    connected (an export, a late refresh opened it)."""
    _capture_loop()
    if _watched_directories.get(user_id) is not chats:
        _watched_directories[user_id] = chats
        chats.subscribe(lambda event: _on_directory_event(user_id, event))
    loop = _loop
    if loop is not None and not loop.is_closed():
        loop.call_soon_threadsafe(_reopened, user_id)


def _reopened(user_id: str) -> None:
    # Another process may have changed the directory while it was released (nobody watched
    # it): the shared lists, which outlive a release in Reflex's state manager, are re-read.
    for kind in ("directory", "memory", "archive"):
        _request_refresh(kind, user_id)
    if user_id not in _user_tabs:
        _schedule_directory_release(user_id)
    people = services().people_by_last_use()
    excess = len(people) - MAX_OPEN_PEOPLE
    for person in people:
        if excess <= 0:
            return
        if person in _user_tabs:
            continue
        pending = _directory_releases.pop(person, None)
        if pending is not None:
            pending.cancel()
        _spawn(_close_directory(person, LRU_MIN_IDLE_S))
        excess -= 1


def _on_directory_event(user_id: str, event: Any) -> None:
    loop = _loop
    if loop is None or loop.is_closed():
        return
    kind = str(getattr(event, "type", ""))

    def schedule() -> None:
        if kind.startswith("shared"):
            _request_refresh("memory", user_id)
            return
        _request_refresh("directory", user_id)
        if _touches_archive(kind, event):
            _request_refresh("archive", user_id)
        chat_id = str(getattr(event, "chat_id", "") or "")
        if chat_id and kind in ("deleted", "renamed"):
            _spawn(_apply_chat_event(user_id, chat_id, kind))
        if chat_id and kind in ("archived", "unarchived") and (user_id, chat_id) in _watchers:
            # Only chats a tab of this worker shows: the policy may archive thousands at once.
            _spawn(_apply_archive(chat_id, kind == "archived"))
        if any(user == user_id for user, _chat in _watchers):
            _spawn(_headers_if_agents_changed(user_id))

    loop.call_soon_threadsafe(schedule)


def _request_refresh(kind: str, user_id: str) -> None:
    """Refresh now if idle, else once more when the running refresh's interval ends."""
    key = (kind, user_id)
    running = key in _refreshes
    _refreshes[key] = True
    if not running:
        _spawn(_refresh_throttled(key))


def _touches_archive(kind: str, event: Any) -> bool:
    """Whether the archived list may change: a reply or rename of a chat that is not archived
    (nearly every event) leaves it alone, and costs it nothing."""
    chat = getattr(event, "chat", None)
    return kind in _ARCHIVE_KINDS or getattr(chat, "archived_at", None) is not None


async def _refresh_throttled(key: tuple[str, str]) -> None:
    kind, user_id = key
    state_cls = getattr(_states(), kind)
    try:
        while _refreshes.get(key):
            _refreshes[key] = False
            try:
                async with _modify(directory_token(user_id), state_cls) as state:
                    # The archived list is read only once a tab of the user has shown it.
                    if kind != "archive" or state.loaded:
                        await state.reload(user_id)
            except Exception:  # the next change (or interval) tries again
                log.warning("%s refresh failed", kind, exc_info=True)
            await asyncio.sleep(DIRECTORY_REFRESH_S)
    finally:
        _refreshes.pop(key, None)


async def _apply_chat_event(user_id: str, chat_id: str, kind: str) -> None:
    title = ""
    if kind == "renamed":
        with contextlib.suppress(KeyError, ValueError):
            title = (await offload(services().directory(user_id).get_summary, chat_id)).title
    async with _modify(conversation_token(chat_id), _states().conversation) as state:
        if kind == "deleted":
            state.deleted = True
            state.loaded = False
        elif title:
            state.title = title


async def _apply_archive(chat_id: str, archived: bool) -> None:
    async with _modify(conversation_token(chat_id), _states().chat_settings) as header:
        if header.loaded and header.archived != archived:
            header.archived = archived


# ── run events ──────────────────────────────────────────────────────


async def _pump_runs(user_id: str, chat_id: str) -> None:
    await pump_runs(
        services().runtime(user_id),
        user_id,
        chat_id,
        token=conversation_token(chat_id),
        conversation=_states().conversation,
        modify=_modify,
        settings_changed=lambda: _refresh_chat_settings(user_id, chat_id),
    )


# ── chat headers ────────────────────────────────────────────────────


def _agent_saved(user_id: str, agent_id: str) -> None:
    """A new version of ``agent_id``: re-read the header of each watched chat bound to it."""
    _capture_loop()
    _refresh_watched_headers(user_id, only_agent=agent_id)


async def _headers_if_agents_changed(user_id: str) -> None:
    """An agent saved by another worker or process changes no chat row here: after a change
    to the directory, compare the agents' save count with the last one seen and, if it moved,
    re-read the headers this worker's tabs show (a few, not every chat)."""
    saved = await offload(services().agents(user_id).versions_saved)
    seen = _agent_saves_seen.get(user_id)  # None: not read yet, so not known to be current
    _agent_saves_seen[user_id] = saved
    if saved != seen:
        _refresh_watched_headers(user_id)


def _refresh_watched_headers(user_id: str, only_agent: str = "") -> None:
    for watched_user, chat_id in list(_watchers):
        if watched_user == user_id:
            _spawn(_refresh_chat_settings(user_id, chat_id, only_agent=only_agent))


async def _refresh_chat_settings(user_id: str, chat_id: str, only_agent: str = "") -> None:
    """Re-read a chat's header and meter, if a tab linked them (and, with ``only_agent``, if
    the chat is bound to that agent)."""
    async with _modify(conversation_token(chat_id), _states().chat_settings) as state:
        if state.chat_id and (not only_agent or state.agent_id == only_agent):
            try:
                await state.refresh(user_id)
            except Exception:  # a header left stale must not stop the chat's run pump
                log.warning("could not refresh the header of chat %s", chat_id, exc_info=True)


# ── plumbing ────────────────────────────────────────────────────────


def _states() -> LiveStates:
    if _targets is None:
        raise RuntimeError("chatsapp.live.bridge.install() was not called by the app module")
    return _targets


def _modify(token: str, state_cls: type[rx.State]) -> contextlib.AbstractAsyncContextManager[Any]:
    return shared_change(_app, token, state_cls)


def _capture_loop() -> None:
    global _loop
    with contextlib.suppress(RuntimeError):
        _loop = asyncio.get_running_loop()


def _spawn(coro: Coroutine[Any, Any, None]) -> asyncio.Task:
    # A fresh context: a task started from inside an event must not carry that event's viewer
    # (chatsapp.states.linking tells the linking event apart by it).
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task) -> None:
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("bridge task failed", exc_info=task.exception())
