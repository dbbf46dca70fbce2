"""A chat's session state (its working memory): read, and edited by hand from a panel.

An edit is written at the version the panel showed (``expected_version``): when a turn or
another tab wrote first, the write is refused, nothing is merged, and the panel shows the
current value beside the draft so the person can redo the edit on it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import reflex as rx

from backend.errors import ChatsError, SessionStateTooLargeError, StaleVersionError
from chatsapp.auth.identity import current_user_id
from chatsapp.services import services
from chatsapp.states.models import SharedChatSettingsState


def _pretty(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds") if ms else ""


class SessionStateTabState(rx.State):
    """Per tab: the panel, the version it read, the draft and any refusal."""

    open: bool = False
    version: int = 0
    size_bytes: int = 0
    limit_bytes: int = 0
    updated_iso: str = ""
    draft: str = ""
    draft_generation: int = 0  # the draft box's key: a new value from the server remounts it
    error: str = ""
    current_value: str = ""  # shown after a stale edit: what the state is now

    async def _chat_id(self) -> str:
        return (await self.get_state(SharedChatSettingsState)).chat_id

    async def _read(self) -> None:
        chat_id = await self._chat_id()
        state = await services().runtime(current_user_id()).get_session_state(chat_id)
        self.version = state.version
        self.size_bytes = state.bytes
        self.updated_iso = _iso(state.updated_at)
        self._show_draft(_pretty(state.data))
        self.limit_bytes = services().max_state_bytes

    @rx.event
    async def set_open(self, value: bool) -> None:
        """The drawer opened (read the state as it is now) or closed."""
        self.open = value
        if value:
            self.error, self.current_value = "", ""
            await self._read()

    def _show_draft(self, text: str) -> None:
        """Put ``text`` in the draft box (it is not bound to ``draft``: see ``save``)."""
        self.draft = text
        self.draft_generation += 1

    @rx.event
    async def reload(self) -> None:
        """Drop the draft and show the state as it is now."""
        self.error, self.current_value = "", ""
        await self._read()

    @rx.event
    async def save_form(self, form_data: dict[str, object]) -> None:
        draft = form_data.get("draft")
        await self.save(draft if isinstance(draft, str) else None)

    @rx.event
    async def save(self, draft: str | None = None) -> None:
        """Save ``draft``, what the box held, sent with Save (the box is not bound to the
        state: a late echo erased what was typed after a pause); a client that sends none
        saves the draft as last shown."""
        if draft is not None:
            if not isinstance(draft, str):
                self.error = "Not saved: the state must be JSON text."
                return
            self.draft = draft
        try:
            data = json.loads(self.draft)
        except json.JSONDecodeError as exc:
            self.error = f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            return
        chat_id = await self._chat_id()
        runtime = services().runtime(current_user_id())
        try:
            saved = await runtime.put_session_state(chat_id, data, expected_version=self.version)
        except StaleVersionError as exc:
            now = await runtime.get_session_state(chat_id)
            self.error = (
                f"The state changed since you opened it (you edited version "
                f"{exc.expected_version}, it is now version {exc.actual_version}). "
                "Nothing was saved: the current value is shown below; reload to edit it."
            )
            self.current_value = _pretty(now.data)
            return
        except SessionStateTooLargeError as exc:
            self.error = (
                f"Too large: {exc.bytes:,} bytes, the ceiling is {exc.limit:,}. Nothing was saved."
            )
            return
        except ChatsError as exc:
            self.error = f"Not saved: {exc}"
            return
        self.error, self.current_value = "", ""
        self.version = saved.version
        self.size_bytes = saved.bytes
        self.updated_iso = _iso(saved.updated_at)
        self._show_draft(_pretty(saved.data))
