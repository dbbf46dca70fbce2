"""The active chat as one tab has it: which chat and branch it shows, the composer, notices.

The live view every tab of the chat shares is :mod:`chatsapp.states.shared_conversation`;
this module holds what is each tab's own (its chosen branch, earlier pages, pending
attachments, the edit box) and the events that send, edit, regenerate, fork and page back.
"""

from __future__ import annotations

import reflex as rx

from backend.errors import ChatNotFoundError, ChatsError, InputTooLargeError
from backend.runtime.failures import describe_refusal
from backend.sharing import Act
from backend.transcript import (
    chosen_leaf,
    load_earlier,
)
from backend.uploads import (
    ATTACHABLE_NAMES,
    accepted_extensions,
    attachment_limits,
    check_message_files,
    check_message_text,
    data_url_size,
    format_size,
    read_attachment,
)
from chatsapp.auth.identity import conversation_token, current_user_id
from chatsapp.chat_route import MESSAGE_PARAMETER, chat_id_of_path, chat_path
from chatsapp.services import offload, services
from chatsapp.states.chat_access import ChatAccess, chat_access
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.linking import link_quietly
from chatsapp.states.page_scripts import scroll_to, scroll_to_bottom, upload_chunks
from chatsapp.states.rows import EntryRow, FileRow, entry_row, iso_time
from chatsapp.states.server_only import server_only
from chatsapp.states.shared_conversation import SharedConversationState

# What the composer's file picker offers (a hint; handle_upload checks the bytes), and how
# its refusal names what can be attached.
ATTACHMENT_ACCEPT = accepted_extensions()
ATTACHMENT_KINDS = ATTACHABLE_NAMES

REVEAL_MAX_PAGES = 40  # a search hit up to ~2,000 messages back is scrolled into view


class ChatTabState(rx.State):
    """Per tab: which chat and branch this tab shows, the composer, earlier pages, notices.

    Earlier pages live here, not in the shared view, so scrolling back in one tab does not
    grow the transcript every other tab receives. ``view_leaf_id`` is the leaf this tab chose
    (the shared view moves it along, see the module); ``seen_newest_id`` the newest message
    when it chose, so a reply written on another branch since is offered, not jumped to.
    """

    active_chat_id: str = ""
    input_error: str = ""
    pending_images: list[str] = []
    _pending_sizes: list[int] = []  # decoded bytes of each pending image (backend only)
    pending_files: list[FileRow] = []  # documents' chips (no bytes: those stay server-side)
    _pending_parts: list[dict] = []  # the documents' checked AI SDK file parts (backend only)
    earlier: list[EntryRow] = []
    earlier_has_more: bool = True
    editing_message_id: str = ""
    edit_text: str = ""
    highlight_message_id: str = ""
    missing: bool = False
    view_leaf_id: str = ""
    seen_newest_id: str = ""
    role: str = ""  # this person's role in the open chat: owner, participant or viewer
    lost_notice: str = ""  # why this tab lost a shared chat (removed, left, deleted)

    def _user(self) -> str:
        return current_user_id()

    async def _access(self, act: Act) -> ChatAccess:
        """The open chat, if this person may do ``act`` there now (``states.chat_access``)."""
        return await chat_access(self.active_chat_id, act)

    async def _active_chat(self):
        return (await self._open_chat_file())[1]

    async def _open_chat_file(self):
        """The open chat's access and its file (in the owner's directory), for reading."""
        access = await self._access("read")
        chats = services().directory(access.owner_id)
        return access, await offload(chats.get_chat, access.chat_id)

    @rx.event
    async def open_chat(self):  # noqa: ANN201
        """on_load of ``/chat/[chat_id]``: link this tab to the chat's shared view."""
        url = self.router.url
        chat_id = chat_id_of_path(url.path)
        highlight = url.query_parameters.get(MESSAGE_PARAMETER, "")
        self.active_chat_id = chat_id
        self.earlier, self.earlier_has_more = [], True
        self.highlight_message_id = str(highlight or "")
        self.missing, self.role, self.lost_notice = False, "", ""
        try:
            access = await chat_access(chat_id, "read")
            user_id = access.owner_id  # the owner's directory and runtime hold the chat
            summary = await offload(services().directory(user_id).get_summary, chat_id)
        except (ChatsError, KeyError, ValueError):
            self.missing = True
            return rx.toast.error("That chat does not exist or was deleted.")
        self.role = access.role
        conversation = await self.get_state(SharedConversationState)
        linked = await link_quietly(conversation, conversation_token(chat_id))
        linked.chat_id = chat_id
        linked.title = summary.title
        linked.expires_iso = iso_time(summary.expires_at) if summary.expires_at else ""
        if not linked.loaded or linked.deleted:
            linked.deleted = False
            await linked.refresh(user_id)
        self._choose(linked, linked.newest_id)
        # Its run events now reach `linked`, for as long as a tab watches it.
        client_token = self.router.session.client_token
        services().tab_opened(access.viewer_id, client_token)
        services().conversation_opened(user_id, chat_id, client_token)
        if self.highlight_message_id:
            await self._reveal(linked, self.highlight_message_id)
            return rx.call_script(scroll_to(self.highlight_message_id))
        return rx.call_script(scroll_to_bottom())

    @server_only
    def lose_chat(self, notice: str) -> None:
        """This person lost the open chat (``chatsapp.live.sharing_live``): keep nothing of it."""
        self.active_chat_id, self.role, self.lost_notice = "", "", notice
        self.earlier, self.editing_message_id, self.highlight_message_id = [], "", ""
        self.view_leaf_id = self.seen_newest_id = ""

    async def _reveal(self, conversation: SharedConversationState, message_id: str) -> None:
        """Load earlier pages (this tab only) until ``message_id`` is shown, within a bound."""
        rows = conversation.rows_for(self.view_leaf_id)
        if any(e.id == message_id for e in rows) or not rows:
            return
        chat = await self._active_chat()
        leaf, anchor = rows[-1].id, rows[0].id
        for _ in range(REVEAL_MAX_PAGES):
            page, more = await offload(
                load_earlier, chat.reader, leaf_id=leaf, before_id=anchor, count=50
            )
            self.earlier = [entry_row(e) for e in page] + self.earlier
            self.earlier_has_more = more
            if not page or not more or any(e.id == message_id for e in page):
                return
            anchor = page[0].id

    @rx.event
    async def leave_deleted_chat(self):  # noqa: ANN201
        """Mounted when the open chat is deleted elsewhere: tell the user, move on."""
        if not self.active_chat_id:
            return None  # already left (the watcher can mount twice)
        directory = await self.get_state(SharedDirectoryState)
        target = next((c.id for c in directory.rows() if c.id != self.active_chat_id), "")
        self.active_chat_id = ""
        return [
            rx.toast.warning("This chat was deleted in another tab."),
            rx.redirect(chat_path(target) if target else "/"),
        ]

    # ── composer ────────────────────────────────────────────────────

    @rx.event
    async def send(self, text: str):  # noqa: ANN201
        text = text.strip()
        self.input_error = ""
        if not text and not self.pending_images and not self._pending_parts:
            return None
        try:
            check_message_text(text, services().settings)
        except InputTooLargeError as exc:
            self.input_error = f"Nothing was sent: {exc}."
            return None  # the composer keeps the text
        try:
            access = await self._access("send")
        except ChatNotFoundError:
            return ChatTabState.leave_deleted_chat
        except ChatsError as exc:
            self.input_error = str(exc)
            return None
        runtime = services().runtime(access.owner_id)
        images = list(self.pending_images)
        documents = list(self._pending_parts)
        conversation = await self.get_state(SharedConversationState)
        # Viewing another branch: the new message continues the branch on screen.
        on_branch = conversation.on_branch(self.view_leaf_id)
        parent_id = conversation.rows_for(self.view_leaf_id)[-1].id if on_branch else None
        try:
            await runtime.send_message(
                self.active_chat_id,
                text,
                images=images,
                attachments=documents,
                parent_id=parent_id,
                author=access.author(),
            )
        except ChatNotFoundError:
            # Deleted (or purged by another process) since this tab opened it: every tab
            # showing it leaves with the "deleted in another tab" notice.
            conversation.deleted, conversation.loaded = True, False
            return ChatTabState.leave_deleted_chat
        except (ChatsError, ValueError, KeyError) as exc:
            self.input_error = describe_refusal(exc)  # "storage unavailable" names no server
            return None
        self.pending_images, self._pending_sizes = [], []
        self.pending_files, self._pending_parts = [], []
        return [rx.set_value("composer", ""), rx.call_script(scroll_to_bottom())]

    @rx.event
    async def stop(self) -> None:
        if self.active_chat_id:
            access = await self._access("send")
            await services().runtime(access.owner_id).cancel(access.chat_id)

    @rx.event
    async def handle_upload(self, files: list[rx.UploadFile]):  # noqa: ANN201
        """Check each file where its bytes arrive: images show as thumbnails, documents as
        chips; a refused file is named with the reason and nothing of it is kept."""
        limits = attachment_limits(services().settings)
        for file in files:
            name = file.name or "file"
            try:
                # Read in chunks and stop at the limit: an oversize file never sits in memory.
                upload = await read_attachment(name, upload_chunks(file), limits)
                held = [
                    *self._pending_sizes,
                    *(data_url_size(p["url"]) for p in self._pending_parts),
                ]
                check_message_files([*held, len(upload.data)], limits)
            except ChatsError as exc:
                return rx.toast.error(f"{exc} Not attached.")
            if upload.is_image:
                self.pending_images = [*self.pending_images, upload.data_url()]
                self._pending_sizes = [*self._pending_sizes, len(upload.data)]
            else:
                self._pending_parts = [*self._pending_parts, upload.file_part()]
                chip = FileRow(name=upload.name, size=format_size(len(upload.data)))
                self.pending_files = [*self.pending_files, chip]
        return None

    @rx.var(cache=True)
    def attachment_limit_bytes(self) -> int:
        """The per-file limit, for the picker to refuse larger files before uploading."""
        return services().settings.max_attachment_bytes

    @rx.event
    def remove_image(self, index: int) -> None:
        self.pending_images = [u for i, u in enumerate(self.pending_images) if i != index]
        self._pending_sizes = [s for i, s in enumerate(self._pending_sizes) if i != index]

    @rx.event
    def remove_file(self, index: int) -> None:
        self.pending_files = [f for i, f in enumerate(self.pending_files) if i != index]
        self._pending_parts = [p for i, p in enumerate(self._pending_parts) if i != index]

    # ── branches ────────────────────────────────────────────────────

    def _choose(self, conversation: SharedConversationState, leaf: str) -> None:
        """This tab shows the branch ending at ``leaf`` from now on (it moves along with it)."""
        self.view_leaf_id, self.seen_newest_id = leaf, conversation.newest_id
        conversation.follow(leaf)

    @rx.event
    async def regenerate(self, assistant_message_id: str):  # noqa: ANN201
        """A new reply beside this one; this tab moves to it (the others stay where they are)."""
        try:
            access = await self._access("retry")
            ticket = (
                await services()
                .runtime(access.owner_id)
                .regenerate(self.active_chat_id, assistant_message_id, author=access.author())
            )
        except ChatsError as exc:
            return rx.toast.error(f"Could not regenerate: {exc}")
        self._choose(await self.get_state(SharedConversationState), ticket.assistant_message_id)
        self.earlier, self.earlier_has_more = [], True
        return None

    @rx.event
    def start_edit(self, message_id: str, text: str) -> None:
        self.editing_message_id, self.edit_text = message_id, text

    @rx.event
    def cancel_edit(self) -> None:
        self.editing_message_id = ""

    @rx.event
    async def submit_edit(self, text: str | None = None):  # noqa: ANN201
        """Send the edited message: ``text`` is what the box held, sent with the submit (the
        box is not bound, see ``SidebarTabState.commit_rename``); a client that sends none
        submits the text the edit started from."""
        message_id = self.editing_message_id
        text = self.edit_text if text is None else text
        if not isinstance(text, str):
            return rx.toast.error("Could not edit the message: it must be text.")
        text = text.strip()
        if not message_id or not text:
            return None
        try:
            check_message_text(text, services().settings)
        except InputTooLargeError as exc:
            return rx.toast.error(f"Could not edit the message: {exc}")
        self.editing_message_id = ""
        try:
            access = await self._access("edit")
            ticket = (
                await services()
                .runtime(access.owner_id)
                .edit_message(self.active_chat_id, message_id, text, author=access.author())
            )
        except ChatsError as exc:
            return rx.toast.error(f"Could not edit the message: {exc}")
        self._choose(await self.get_state(SharedConversationState), ticket.assistant_message_id)
        self.earlier, self.earlier_has_more = [], True
        return None

    @rx.event
    async def submit_edit_form(self, form_data: dict[str, object]):  # noqa: ANN201
        text = form_data.get("text")
        return await self.submit_edit(text if isinstance(text, str) else None)

    @rx.event
    async def show_sibling(self, sibling_id: str):  # noqa: ANN201
        """Show another version of a message (in this tab only), at its newest leaf."""
        try:
            access, chat = await self._open_chat_file()
            leaf = await offload(chosen_leaf, chat.reader, sibling_id)
        except ChatsError as exc:
            return rx.toast.error(f"Could not show that version: {exc}")
        conversation = await self.get_state(SharedConversationState)
        self._choose(conversation, leaf)
        if leaf != conversation.newest_id and not conversation.on_branch(leaf):
            await conversation.refresh(access.owner_id)  # read that branch's window
        self.earlier, self.earlier_has_more = [], True
        return None

    @rx.event
    async def show_newest(self):  # noqa: ANN201
        """The "new reply on another branch" hint was clicked: show the newest path."""
        conversation = await self.get_state(SharedConversationState)
        self._choose(conversation, conversation.newest_id)
        self.earlier, self.earlier_has_more = [], True
        return rx.call_script(scroll_to_bottom())

    @rx.event
    async def fork_from(self, message_id: str):  # noqa: ANN201
        """A new chat holding the path from the root to ``message_id``, opened in this tab.

        Every tab's sidebar shows it through the directory's change events.
        """
        chats = services().directory(self._user())
        try:
            await self._access("fork")  # only the owner: a copy they could not take back
            forked = await offload(chats.fork_chat, self.active_chat_id, message_id)
        except (ChatsError, KeyError, ValueError) as exc:
            return rx.toast.error(f"Could not fork this chat: {exc}")
        return rx.redirect(chat_path(forked.id))

    @rx.event
    async def load_earlier(self) -> None:
        conversation = await self.get_state(SharedConversationState)
        shown = self.earlier + conversation.rows_for(self.view_leaf_id)
        if not shown:
            return
        chat = await self._active_chat()
        leaf, first = shown[-1].id, shown[0].id
        page, more = await offload(load_earlier, chat.reader, leaf_id=leaf, before_id=first)
        self.earlier = [entry_row(e) for e in page] + self.earlier
        self.earlier_has_more = more
