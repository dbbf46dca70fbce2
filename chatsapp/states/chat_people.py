"""Who is in a chat, who has it open now, and who is typing: shared by every tab showing it.

Linked to the chat's shared token (``conv-<chat id>``), the same token as its transcript, so
every member's tabs, in every app process, see one value (with Redis, through Reflex's shared
state and relay, as the transcript). Three sources write it:

* the members: read from ``Sharing.members`` when a tab links and whenever the sharing change
  feed names the chat (``chatsapp.live.sharing_live``);
* presence: the live layer counts each person's tabs watching the chat as they open and leave
  it, per app process (under the shared state's lock, so processes on Redis add up), and
  renews its process's **lease** every heartbeat while it has such tabs: the counts of
  a process that stopped renewing (it crashed) are dropped once its lease ends, at the next
  count or renewal of any process (``viewers``: username -> tabs of live processes);
* typing: a member's composer sends :meth:`ChatPeopleTabState.typing`, throttled in the
  browser; the name stays in ``typing`` for :data:`TYPING_SHOWN_S` after the last keystroke.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import reflex as rx

from backend.errors import ChatsError
from backend.sharing import ChatRef
from chatsapp.auth.identity import conversation_token, current_viewer
from chatsapp.chat_route import chat_id_of_path
from chatsapp.services import offload, services
from chatsapp.states.chat_access import chat_access, person
from chatsapp.states.linking import link_quietly
from chatsapp.states.server_only import server_only

PRESENCE_LEASE_S = 30.0
"""A process's tab counts stand this long after it last renewed them (three of the live
layer's heartbeats: ``chatsapp.live.sharing_live.HEARTBEAT_S``)."""
TYPING_SHOWN_S = 3.0
"""How long "… is typing" stays after the last keystroke the composer reported."""
TYPING_THROTTLE_MS = 1000
"""The composer reports typing at most once per this interval (see the chat view)."""


@dataclasses.dataclass(frozen=True)
class MemberRow:
    user_id: str = ""
    username: str = ""
    role: str = ""


def member_rows(owner_id: str, chat_id: str, viewer_id: str) -> list[MemberRow]:
    """The chat's people, owner first, as ``viewer_id`` may read them (blocking)."""
    chat = ChatRef(owner_id=owner_id, chat_id=chat_id)
    found = services().sharing().members(person(viewer_id), chat)
    return [MemberRow(m.user_id, m.username, m.role) for m in found]


Counts = dict[str, dict[str, int]]  # process -> username -> tabs showing the chat
Leases = dict[str, float]  # process -> when its counts end unless renewed (wall-clock s)


def with_tabs_of(counts: Counts, process: str, tabs: dict[str, int]) -> Counts:
    """``counts`` with ``process``'s tabs (username -> tabs) replaced by ``tabs``: each
    process writes all its own, so writes that land out of order still end right."""
    others = {p: c for p, c in counts.items() if p != process}
    mine = {username: n for username, n in tabs.items() if n > 0}
    return {**others, process: mine} if mine else others


def renewed(counts: Counts, leases: Leases, process: str, now: float) -> tuple[Counts, Leases]:
    """``process`` renews its lease at ``now``; every lease ended by then goes with its
    process's counts (a process that crashed stops renewing)."""
    alive = {p: until for p, until in leases.items() if until > now and p in counts}
    if process in counts:
        alive[process] = now + PRESENCE_LEASE_S
    return {p: c for p, c in counts.items() if p in alive}, alive


def tabs_per_person(counts: Counts) -> dict[str, int]:
    """username -> tabs showing the chat, over every process."""
    total: dict[str, int] = {}
    for mine in counts.values():
        for username, tabs in mine.items():
            total[username] = total.get(username, 0) + tabs
    return total


class SharedChatPeopleState(rx.SharedState):
    """The people of one chat (module docstring), shared by every tab that shows it."""

    chat_id: str = ""
    members: list[MemberRow] = []
    viewers: dict[str, int] = {}  # username -> tabs showing the chat now (live processes)
    present: list[str] = []  # the usernames with at least one tab, sorted
    typing: list[str] = []
    loaded: bool = False
    _typed_at: dict[str, float] = {}  # username -> monotonic time of the last keystroke
    _counts: Counts = {}
    _leases: Leases = {}

    @server_only
    async def reload(self, owner_id: str) -> None:
        """Re-read the members (the live layer, when the sharing feed names the chat)."""
        self.show_members(await offload(member_rows, owner_id, self.chat_id, owner_id))

    @server_only
    def show_members(self, rows: list[MemberRow]) -> None:
        if rows != self.members:
            self.members = rows
        if not self.loaded:
            self.loaded = True

    @server_only
    def show_tabs_of(self, process: str, tabs: dict[str, int], now: float) -> None:
        """App process ``process`` serves ``tabs`` (username -> its tabs showing the chat)
        now (``now``: wall-clock seconds; the process's lease renews)."""
        self._counts = with_tabs_of(self._counts, process, tabs)
        self.renew(process, now)

    @server_only
    def renew(self, process: str, now: float) -> None:
        """``process`` still serves its tabs (its heartbeat); ended leases are dropped."""
        self._counts, self._leases = renewed(self._counts, self._leases, process, now)
        viewers = tabs_per_person(self._counts)
        if viewers != self.viewers:
            self.viewers = viewers
        present = sorted(viewers)
        if present != self.present:
            self.present = present
        if any(name not in viewers for name in self.typing):
            self.typing = [name for name in self.typing if name in viewers]

    @server_only
    def typed(self, username: str, now: float) -> None:
        self._typed_at = {**self._typed_at, username: now}
        if username not in self.typing:
            self.typing = [*self.typing, username]

    @server_only
    def stop_typing_if_idle(self, username: str, now: float) -> None:
        if now - self._typed_at.get(username, 0.0) >= TYPING_SHOWN_S - 0.05:
            self._typed_at = {k: v for k, v in self._typed_at.items() if k != username}
            if username in self.typing:
                self.typing = [name for name in self.typing if name != username]


class ChatPeopleTabState(rx.State):
    """Per tab: links the chat's people to this tab and reports its typing."""

    @rx.event
    async def load(self) -> None:
        """on_load of a chat page: link this tab to the chat's people (members read once)."""
        chat_id = chat_id_of_path(self.router.url.path)
        try:
            access = await chat_access(chat_id, "read")
        except ChatsError:
            return  # the page shows "this chat does not exist"
        people = await self.get_state(SharedChatPeopleState)
        linked = await link_quietly(people, conversation_token(chat_id))
        if not linked.loaded:
            linked.chat_id = chat_id
            rows = await offload(member_rows, access.owner_id, chat_id, access.viewer_id)
            linked.show_members(rows)

    @rx.event
    async def typing(self):  # noqa: ANN201
        """The composer changed (throttled in the browser): "… is typing" for a while."""
        people = await self.get_state(SharedChatPeopleState)
        try:
            await chat_access(people.chat_id, "send")
        except ChatsError:
            return None  # a viewer, or no longer a member: nobody is told they type
        username = current_viewer().username
        people.typed(username, time.monotonic())
        return ChatPeopleTabState.clear_typing(username)

    @rx.event(background=True)
    async def clear_typing(self, username: str) -> None:
        """Server-side follow-up of :meth:`typing` (a client naming another name clears it
        only if that person stopped typing anyway)."""
        await asyncio.sleep(TYPING_SHOWN_S)
        async with self:
            people = await self.get_state(SharedChatPeopleState)
            people.stop_typing_if_idle(str(username), time.monotonic())
