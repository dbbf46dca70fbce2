"""Shared memory blocks: shown and edited in a panel, live in every tab of the user."""

from __future__ import annotations

import reflex as rx

from backend.chats import MEMORY_LABEL
from backend.errors import ChatsError
from chatsapp.auth.identity import current_user_id
from chatsapp.services import offload, services
from chatsapp.states.linking import link_to_user_list
from chatsapp.states.rows import MemoryRow
from chatsapp.states.server_only import server_only

APPEND_FIELD_ID = "memory-append"  # the "Add a fact" field, emptied once its fact is saved


class SharedMemoryState(rx.SharedState):
    """Shared by every tab of one user (linked to ``user-<id>``): their memory blocks."""

    blocks: list[MemoryRow] = []
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        await link_to_user_list(self)

    @server_only
    async def reload(self, user_id: str, *, touch: bool = True) -> None:
        """``touch=False``: the live bridge's read, not the person's use."""
        chats = services().directory(user_id, touch=touch)
        blocks = await offload(chats.list_shared_contexts)
        labels = dict(blocks)
        labels.setdefault(MEMORY_LABEL, "")
        self.blocks = [MemoryRow(label, content) for label, content in sorted(labels.items())]
        self.loaded = True


class MemoryEditorTabState(rx.State):
    """Per tab: whether the panel is open, which block is being edited, the draft text."""

    open: bool = False
    label: str = MEMORY_LABEL
    draft: str = ""
    editing: bool = False

    def _chats(self):
        return services().directory(current_user_id())

    @rx.event
    def toggle(self) -> None:
        self.open = not self.open

    @rx.event
    def start_edit(self, label: str, content: str) -> None:
        self.label, self.draft, self.editing = label, content, True

    @rx.event
    def cancel(self) -> None:
        self.editing = False

    @rx.event
    async def save(self, draft: str | None = None):  # noqa: ANN201
        """Save ``draft``, what the box held, sent with Save (the box is not bound to the
        state: a late echo erased what was typed after a pause); a client that sends none
        saves the text the edit started from."""
        draft = self.draft if draft is None else draft
        if not isinstance(draft, str):
            return rx.toast.error("Could not save memory: it must be text.")
        chats = self._chats()
        try:
            await offload(chats.set_shared_context, self.label, draft)
        except (ChatsError, ValueError) as exc:
            return rx.toast.error(f"Could not save memory: {exc}")
        self.editing = False
        return None

    @rx.event
    async def save_form(self, form_data: dict[str, object]):  # noqa: ANN201
        draft = form_data.get("draft")
        return await self.save(draft if isinstance(draft, str) else None)

    @rx.event
    async def append(self, label: str, text: str):  # noqa: ANN201
        """Add ``text`` (the field's, sent with Add) as one line; the field is emptied only
        once it is saved."""
        if not isinstance(text, str):
            return rx.toast.error("Could not add to memory: it must be text.")
        text = text.strip()
        if not text:
            return None
        chats = self._chats()
        try:
            await offload(chats.append_shared_context, label, f"- {text}\n")
        except (ChatsError, ValueError) as exc:
            return rx.toast.error(f"Could not add to memory: {exc}")
        return rx.set_value(APPEND_FIELD_ID, "")

    @rx.event
    async def append_form(self, form_data: dict[str, object]):  # noqa: ANN201
        text = form_data.get("text")
        return await self.append(MEMORY_LABEL, text if isinstance(text, str) else "")
