"""The share dialog of a chat: its people (owner only: add, change a role, remove), the
"let this chat use my memory and other chats" switch, share links, and a member's "Leave".

Every handler names no chat: it acts on the chat this tab shows (``ChatTabState``), checked
by ``Sharing.authorize`` through ``chatsapp.states.chat_access`` on every event. What the
owner types as a username is never echoed as "exists" or "does not": an unknown, malformed
or disabled name gets sharing's one refusal (``ShareRecipientUnavailableError``). The member
list is the chat's shared ``SharedChatPeopleState``, refreshed by the live layer from the
sharing change feed, so a change shows in every tab of every member.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import reflex as rx

from backend.errors import ChatsError
from backend.sharing import MEMBER_ROLES, Act, ShareLink
from chatsapp.auth.identity import current_viewer
from chatsapp.services import offload, services
from chatsapp.states.chat_access import ChatAccess, chat_access, person
from chatsapp.states.chat_people import SharedChatPeopleState, member_rows
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.share_links import link_url, snapshot_of

OWNER_CONTEXT_EXPOSES = (
    "Runs here may read your memory and search your other chats; every member sees the replies."
)


@dataclasses.dataclass(frozen=True)
class LinkRow:
    id: str = ""
    title: str = ""
    created_iso: str = ""
    message_count: int = 0
    includes_attachments: bool = False


def _link_row(link: ShareLink) -> LinkRow:
    created = datetime.fromtimestamp(link.created_at / 1000, UTC).isoformat(timespec="minutes")
    return LinkRow(link.id, link.title, created, link.message_count, link.includes_attachments)


def owner_context_switch(access: ChatAccess) -> bool:
    """The owner's switch as stored, through the one backend call that checks the reader is
    the owner (blocking). Not ``run_may_use_owner_context``: that says whether runs use the
    owner's context *now*, which for a chat shared with nobody is always yes."""
    return services().sharing().owner_context(person(access.viewer_id), access.ref)


class ShareDialogTabState(rx.State):
    """Per tab: the dialog's open state, the last refusal or confirmation, links, the switch."""

    open: bool = False
    error: str = ""
    notice: str = ""
    owner_context: bool = False
    links: list[LinkRow] = []
    new_link_url: str = ""  # shown once, right after creating (only its hash is kept)

    async def _chat(self, act: Act) -> ChatAccess:
        tab = await self.get_state(ChatTabState)
        return await chat_access(tab.active_chat_id, act)

    async def _refresh_members(self, access: ChatAccess) -> None:
        """This tab's copy at once (the feed refreshes every other tab within its poll)."""
        rows = await offload(member_rows, access.owner_id, access.chat_id, access.viewer_id)
        (await self.get_state(SharedChatPeopleState)).show_members(rows)

    def _refused(self, exc: ChatsError) -> None:
        self.error, self.notice = str(exc), ""

    @rx.event
    async def set_open(self, value: bool) -> None:
        """Opened by the owner (the people, the switch and the links are read) or closed."""
        self.error, self.notice, self.new_link_url = "", "", ""
        self.open = bool(value) if isinstance(value, bool) else False
        if not self.open:
            return
        try:
            access = await self._chat("share")
        except ChatsError as exc:
            self.open = False
            self._refused(exc)
            return
        sharing = services().sharing()
        self.owner_context = await offload(owner_context_switch, access)
        await self._refresh_members(access)
        found = await offload(sharing.list_links, person(access.viewer_id))
        self.links = [_link_row(link) for link in found if link.chat_id == access.chat_id]

    @rx.event
    async def share(self, form_data: dict[str, object]) -> None:
        """Add the person named in the form as a participant or a viewer."""
        username, role = form_data.get("username"), form_data.get("role") or "participant"
        if not isinstance(username, str) or not username.strip():
            self.error, self.notice = "Type the username of the person to add.", ""
            return
        if role not in MEMBER_ROLES:
            self.error, self.notice = "Choose participant or viewer.", ""
            return
        try:
            access = await self._chat("share")
            sharing = services().sharing()
            member = await offload(
                sharing.share, person(access.viewer_id), access.ref, username.strip(), role
            )
        except ChatsError as exc:
            self._refused(exc)
            return
        self.error, self.notice = "", f"Shared with {member.username} as {member.role}."
        await self._refresh_members(access)

    @rx.event
    async def change_role(self, member_id: str, role: str) -> None:
        try:
            access = await self._chat("share")
            if role not in MEMBER_ROLES:
                self.error = "Choose participant or viewer."
                return
            actor = person(access.viewer_id)
            await offload(services().sharing().change_role, actor, access.ref, member_id, role)
        except ChatsError as exc:
            self._refused(exc)
            return
        self.error = ""
        await self._refresh_members(access)

    @rx.event
    async def remove_member(self, member_id: str) -> None:
        try:
            access = await self._chat("share")
            actor = person(access.viewer_id)
            await offload(services().sharing().remove_member, actor, access.ref, member_id)
        except ChatsError as exc:
            self._refused(exc)
            return
        self.error = ""
        await self._refresh_members(access)

    @rx.event
    async def set_owner_context(self, enabled: bool) -> None:
        try:
            access = await self._chat("share")
            actor = person(access.viewer_id)
            await offload(
                services().sharing().set_owner_context, actor, access.ref, enabled is True
            )
            # Read back, not assumed: another tab of the owner may have switched it since.
            self.owner_context = await offload(owner_context_switch, access)
        except ChatsError as exc:
            self._refused(exc)

    @rx.event
    async def leave(self):  # noqa: ANN201
        """A member leaves the chat: every tab of theirs loses it (the feed says so)."""
        try:
            access = await self._chat("leave")
            await offload(services().sharing().leave, person(access.viewer_id), access.ref)
        except ChatsError as exc:
            return rx.toast.error(str(exc))
        self.open = False
        return [rx.toast.info("You left the chat."), rx.redirect("/")]

    # ── links ───────────────────────────────────────────────────────

    @rx.event
    async def create_link(self, form_data: dict[str, object]) -> None:
        """A link to the branch this tab shows, up to its newest message or the one chosen."""
        include_files = form_data.get("attachments") in ("on", True, "true")
        up_to = form_data.get("up_to")
        tab = await self.get_state(ChatTabState)
        try:
            access = await self._chat("share")
            chats = services().directory(access.owner_id)
            chat = await offload(chats.get_chat, access.chat_id)
            title = (await offload(chats.get_summary, access.chat_id)).title
            leaf = up_to if isinstance(up_to, str) and up_to else tab.view_leaf_id
            messages = await offload(snapshot_of, chat, leaf, access.owner_id)
            created = await offload(
                services().sharing().create_link,
                person(access.viewer_id),
                access.ref,
                title,
                messages,
                include_attachments=include_files,
            )
        except (ChatsError, KeyError, ValueError) as exc:
            self.error, self.notice = str(exc), ""
            return
        self.error, self.notice = "", "Link created: copy it now, it is shown once."
        self.new_link_url = link_url(created.token)
        self.links = [_link_row(created.link), *self.links]

    @rx.event
    async def revoke_link(self, link_id: str) -> None:
        viewer = current_viewer()
        try:
            gone = await offload(services().sharing().revoke_link, person(viewer.user_id), link_id)
        except ChatsError as exc:
            self._refused(exc)
            return
        self.links = [row for row in self.links if row.id != link_id]
        self.notice = "Link revoked: it opens nothing now." if gone else ""
