"""The sidebar: the user's chat list (shared by all their tabs) and per-tab sidebar UI state."""

from __future__ import annotations

import asyncio

import reflex as rx

from backend.chats.sidebar import SIDEBAR_PAGE, SidebarPage
from backend.errors import ChatsError
from backend.runtime import DEFAULT_AGENT_ID, start_chat
from backend.sharing import ChatRef
from chatsapp.auth.identity import current_user_id
from chatsapp.chat_route import chat_path
from chatsapp.services import offload, services
from chatsapp.states.chat_access import person
from chatsapp.states.linking import link_to_user_list
from chatsapp.states.models import BUILTIN_AGENT_LABEL
from chatsapp.states.rows import AgentChoiceRow, ChatRow, chat_row
from chatsapp.states.search import SearchTabState
from chatsapp.states.server_only import server_only

PAGE_SIZE = SIDEBAR_PAGE
UNDO_SECONDS = 8.0
BUILTIN_AGENT_CHOICE = AgentChoiceRow(DEFAULT_AGENT_ID, BUILTIN_AGENT_LABEL)


async def open_new_chat_with(agent_id: str):  # noqa: ANN201
    """Start a chat bound to ``agent_id`` and open it; a toast says why not."""
    if not isinstance(agent_id, str):  # (the backend's None, the default agent, is no pick)
        return rx.toast.error("Could not start the chat: pick an agent from the menu.")
    try:
        record = await start_chat(services().runtime(current_user_id()), agent_id)
    except ChatsError as exc:
        return rx.toast.error(f"Could not start the chat: {exc}")
    return rx.redirect(chat_path(record.id))


def members_follow_deletion(owner_id: str, chat_id: str, *, deleted: bool) -> None:
    """The owner deleted (or restored) a chat: its members lose it (or get it back) too, and
    the undo window is everyone's (docs/sharing.md). Blocking; no account: nothing shared."""
    try:
        owner = person(owner_id)
    except ChatsError:
        return
    chat = ChatRef(owner_id=owner_id, chat_id=chat_id)
    sharing = services().sharing()
    (sharing.chat_deleted if deleted else sharing.chat_restored)(owner, chat)


class SharedDirectoryState(rx.SharedState):
    """Shared by every tab of one user (linked to ``user-<id>``): the chat list's first page.

    Written by this state's handlers and by the bridge (``chatsapp.live.bridge``) when the directory
    reports a change, so edits made anywhere (another tab, a generated title, a finished
    reply bumping the order) appear in every tab without a reload.

    Per-row updates: Reflex re-sends the whole value of each changed var, so the page is held
    in ``PAGE_SIZE`` slot vars (``slot_0`` …) rather than one list. A chat keeps its slot while
    it stays on the page; ``positions[k]`` is slot k's place in the list (``PAGE_SIZE`` when
    empty) and the sidebar orders the slots with CSS ``order``. A rename re-sends one row; a
    reply bumping a chat to the top re-sends that row and ``positions`` (40 small ints).
    """

    positions: list[int] = [PAGE_SIZE] * PAGE_SIZE
    count: int = 0  # rows of the first page, pinned ones included (paging reads it)
    pinned: list[ChatRow] = []  # the "Pinned" group, newest pin first (few: one var)
    loaded: bool = False
    for _slot in range(PAGE_SIZE):
        __annotations__[f"slot_{_slot}"] = "ChatRow"
        locals()[f"slot_{_slot}"] = ChatRow()
    del _slot

    @rx.event
    async def link(self) -> None:
        await link_to_user_list(self)

    @server_only
    async def reload(self, user_id: str) -> None:
        """Re-read the first page; only the slots whose row changed are re-sent."""
        self.show(await offload(services().directory(user_id).sidebar_page))

    @server_only
    def show(self, page: SidebarPage) -> None:
        """Show the sidebar page's chats (the bridge reads the page: one backend call); a
        pinned chat shows in the "Pinned" group only."""
        pinned = [chat_row(s) for s in page.pinned]
        if pinned != self.pinned:
            self.pinned = pinned
        self.place([chat_row(s) for s in page.chats if not s.pinned], listed=len(page.chats))

    @server_only
    def place(self, rows: list[ChatRow], listed: int | None = None) -> None:
        """Show ``rows`` (newest first, at most ``PAGE_SIZE``), keeping each chat's slot;
        ``listed``: how many the page held before its pinned chats were taken out."""
        current = [self.slot(k) for k in range(PAGE_SIZE)]
        wanted = {row.id for row in rows}
        slot_of = {row.id: k for k, row in enumerate(current) if row.id in wanted}
        free = [k for k, row in enumerate(current) if row.id not in slot_of]
        positions = [PAGE_SIZE] * PAGE_SIZE
        for place, row in enumerate(rows[:PAGE_SIZE]):
            k = slot_of[row.id] if row.id in slot_of else free.pop(0)
            positions[k] = place
            if current[k] != row:
                setattr(self, f"slot_{k}", row)
        for k in free:
            if current[k].id:
                setattr(self, f"slot_{k}", ChatRow())
        if positions != self.positions:
            self.positions = positions
        count = len(rows) if listed is None else listed
        if self.count != count:
            self.count = count
        if not self.loaded:
            self.loaded = True

    @server_only
    def slot(self, k: int) -> ChatRow:
        return getattr(self, f"slot_{k}")

    @server_only
    def rows(self) -> list[ChatRow]:
        """The shown page in list order (for paging cursors and "the next chat")."""
        placed = sorted((p, k) for k, p in enumerate(self.positions) if p < PAGE_SIZE)
        return [self.slot(k) for _p, k in placed]


class SidebarTabState(rx.State):
    """Per tab: further pages, inline rename, the undo bar, archive, "New chat with ▾"
    (searches: ``SearchTabState``).

    Each tab scrolls on its own; only the first page of the list is shared (and the first
    page of archived chats: ``chatsapp.states.archive.SharedArchiveState``).
    """

    more_chats: list[ChatRow] = []
    has_more: bool = True
    loading_more: bool = False
    editing_id: str = ""
    edit_title: str = ""
    undo_chat_id: str = ""
    undo_title: str = ""
    collapsed: bool = False
    archived_open: bool = False
    agent_choices: list[AgentChoiceRow] = []

    def _chats(self):
        return services().directory(current_user_id())

    # ── create ──────────────────────────────────────────────────────

    @rx.event
    async def create_chat(self):  # noqa: ANN201
        summary = await offload(self._chats().create_chat)
        return rx.redirect(chat_path(summary.id))

    @rx.event
    async def load_agent_choices(self, menu_open: bool) -> None:
        """The "New chat with ▾" menu opened: list the agents as they are now."""
        if not menu_open:
            return
        found = await offload(services().agents(current_user_id()).list_agents)
        choices = [BUILTIN_AGENT_CHOICE]
        choices += [AgentChoiceRow(a.agent_id, a.name, a.is_default) for a in found]
        self.agent_choices = choices

    @rx.event
    async def create_chat_with(self, agent_id: str):  # noqa: ANN201
        """A new chat bound to the agent picked in the menu."""
        return await open_new_chat_with(agent_id)

    # ── infinite scroll ─────────────────────────────────────────────

    @rx.event
    async def load_more(self) -> None:
        if self.loading_more or not self.has_more:
            return
        directory = await self.get_state(SharedDirectoryState)
        shown = directory.rows() + self.more_chats
        if directory.count + len(self.more_chats) < PAGE_SIZE:
            self.has_more = False
            return
        self.loading_more = True
        last = shown[-1]
        # (updated_at, id) is a tie-stable cursor: chats updated in the same ms are not skipped.
        cursor = (last.updated_at, last.id)
        page = await offload(self._chats().list_chats, limit=PAGE_SIZE, before=cursor)
        known = {row.id for row in shown}
        fresh = [chat_row(s) for s in page if s.id not in known and not s.pinned]
        self.more_chats = self.more_chats + fresh
        self.has_more = len(page) == PAGE_SIZE
        self.loading_more = False

    # ── rename ──────────────────────────────────────────────────────

    @rx.event
    def start_rename(self, chat_id: str, title: str) -> None:
        self.editing_id = chat_id
        self.edit_title = title

    @rx.event
    def set_edit_title(self, value: str) -> None:
        self.edit_title = value

    @rx.event
    def cancel_rename(self) -> None:
        self.editing_id = ""

    @rx.event
    async def commit_rename(self, title: str | None = None):  # noqa: ANN201
        """Rename the chat being edited to ``title``: what the field held, sent with the commit
        (the field is not bound: a late echo of a bound field erased what was typed after a
        pause). A client that sends none gets its last ``set_edit_title``."""
        chat_id = self.editing_id
        title = self.edit_title if title is None else title
        self.editing_id = ""
        if not chat_id:
            return None
        if not isinstance(title, str):
            return rx.toast.error("Could not rename: the title must be text.")
        try:
            await offload(self._chats().rename_chat, chat_id, title)
        except (ChatsError, ValueError, KeyError) as exc:
            return rx.toast.error(f"Could not rename: {exc}")
        return None

    @rx.event
    async def submit_rename(self, form_data: dict[str, object]):  # noqa: ANN201
        """Enter in the title field (its form's submit)."""
        title = form_data.get("title")
        return await self.commit_rename(title if isinstance(title, str) else None)

    # ── delete with undo ────────────────────────────────────────────

    @rx.event
    async def delete_chat(self, chat_id: str, title: str):  # noqa: ANN201
        try:
            await offload(self._chats().delete_chat, chat_id)
            await offload(members_follow_deletion, current_user_id(), chat_id, deleted=True)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not delete the chat: {exc}")
        self.more_chats = [row for row in self.more_chats if row.id != chat_id]
        self.undo_chat_id, self.undo_title = chat_id, title
        return SidebarTabState.expire_undo(chat_id)

    @rx.event(background=True)
    async def expire_undo(self, chat_id: str) -> None:
        await asyncio.sleep(UNDO_SECONDS)
        async with self:
            if self.undo_chat_id == chat_id:
                self.undo_chat_id = ""

    @rx.event
    async def undo_delete(self):  # noqa: ANN201
        chat_id, self.undo_chat_id = self.undo_chat_id, ""
        if not chat_id:
            return None
        try:
            await offload(self._chats().restore_chat, chat_id)
            await offload(members_follow_deletion, current_user_id(), chat_id, deleted=False)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not restore the chat: {exc}")
        return rx.redirect(chat_path(chat_id))

    # ── archive ─────────────────────────────────────────────────────

    @rx.event
    async def archive_chat(self, chat_id: str):  # noqa: ANN201
        return await self._set_archived(chat_id, True)

    @rx.event
    async def unarchive_chat(self, chat_id: str):  # noqa: ANN201
        return await self._set_archived(chat_id, False)

    async def _set_archived(self, chat_id: str, archived: bool):
        """Every tab's lists follow through the directory's event; this tab's own pages now."""
        chats = self._chats()
        try:
            await offload(chats.archive_chat if archived else chats.unarchive_chat, chat_id)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not change the archive: {exc}")
        if archived:
            self.more_chats = [row for row in self.more_chats if row.id != chat_id]
        (await self.get_state(SearchTabState)).archive_changed(chat_id, archived)
        return None

    # ── pins and temporary chats ────────────────────────────────────

    @rx.event
    async def pin_chat(self, chat_id: str):  # noqa: ANN201
        return await self._set_pinned(chat_id, True)

    @rx.event
    async def unpin_chat(self, chat_id: str):  # noqa: ANN201
        return await self._set_pinned(chat_id, False)

    async def _set_pinned(self, chat_id: str, pinned: bool):
        """Every tab's sidebar follows through the directory's event (pinned / unpinned)."""
        pins = self._chats().pins
        try:
            await offload(pins.pin if pinned else pins.unpin, chat_id)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not change the pin: {exc}")
        if pinned:
            self.more_chats = [row for row in self.more_chats if row.id != chat_id]
        return None

    @rx.event
    async def create_temporary_chat(self):  # noqa: ANN201
        """A temporary chat: in no list or search, gone once its window closes."""
        summary = await offload(self._chats().temporary.start)
        return rx.redirect(chat_path(summary.id))

    @rx.event
    def toggle_archived(self) -> None:
        self.archived_open = not self.archived_open

    @rx.event
    def toggle_sidebar(self) -> None:
        self.collapsed = not self.collapsed
