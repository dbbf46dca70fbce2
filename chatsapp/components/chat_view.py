"""The main pane: header, transcript window, streamed reply, composer."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.accessible_upload import accessible_upload
from chatsapp.components.context_meter import context_meter
from chatsapp.components.memory_panel import memory_toggle
from chatsapp.components.message import file_chip, message_view
from chatsapp.components.model_picker import chat_header_controls
from chatsapp.components.projects import project_badge
from chatsapp.components.settings import chat_export_url
from chatsapp.components.sharing import (
    lost_notice,
    people_bar,
    share_dialog,
    share_menu_items,
    typing_reporter,
    viewer_notice,
)
from chatsapp.components.sidebar import drawer_button
from chatsapp.components.temporary_banner import temporary_banner
from chatsapp.reflex_seam import var_data_of
from chatsapp.states.conversation import (
    ATTACHMENT_ACCEPT,
    ATTACHMENT_KINDS,
    ChatTabState,
)
from chatsapp.states.shared_conversation import SharedConversationState
from chatsapp.states.shown_vars import shown_message_count, shown_on_branch, shown_rows

UPLOAD_ID = "image-upload"
# The composer is uncontrolled (no per-keystroke round trip); Send reads its DOM value.
COMPOSER_VALUE = rx.Var("document.getElementById('composer')?.value ?? ''").to(str)


def _header() -> rx.Component:
    # Padding and the phone's two rows: assets/layout.css (.chat-header).
    return rx.hstack(
        drawer_button(),
        rx.heading(
            SharedConversationState.title,
            size="4",
            id="chat-title",
            trim="both",
            flex="1",
            min_width="0",
            style={"overflow": "hidden", "white_space": "nowrap", "text_overflow": "ellipsis"},
        ),
        # The message count, model and agent: they wrap beside the title on wider screens and
        # are a second row that scrolls sideways on a phone (assets/layout.css).
        rx.el.div(
            rx.text(
                shown_message_count(ChatTabState.view_leaf_id).to_string(),
                rx.cond(
                    shown_message_count(ChatTabState.view_leaf_id) == 1, " message", " messages"
                ),
                size="1",
                color_scheme="gray",
                white_space="nowrap",
                id="message-count",
            ),
            project_badge(SharedConversationState.chat_id),
            chat_header_controls(),
            people_bar(),
            class_name="chat-header-details",
        ),
        memory_toggle(),
        _chat_menu(),
        border_bottom="1px solid var(--gray-a5)",
        width="100%",
        align="center",
        class_name="chat-header",
    )


def _chat_menu() -> rx.Component:
    """This chat's downloads (the whole export lives on the Settings page)."""
    chat_id = SharedConversationState.chat_id
    return rx.menu.root(
        rx.menu.trigger(
            rx.icon_button(
                rx.icon("ellipsis", size=16),
                variant="ghost",
                aria_label="Chat menu",
                id="chat-header-menu",
            )
        ),
        rx.menu.content(
            share_menu_items(),
            # Selecting an item downloads (the route answers as an attachment: the chat stays).
            rx.menu.item(
                "Export as JSON",
                on_select=rx.download(url=chat_export_url(chat_id, "json")),
                id="export-chat-json",
            ),
            rx.menu.item(
                "Export as Markdown",
                # The branch this tab shows (the route reads ``leaf``; without it, the newest).
                on_select=rx.download(url=chat_export_url(chat_id, "md") + "?leaf=" + _leaf()),
                id="export-chat-markdown",
            ),
        ),
    )


def _leaf() -> rx.Var[str]:
    """The last message of the branch this tab shows ("" for an empty chat)."""
    rows = shown_rows(ChatTabState.view_leaf_id)
    return rx.cond(rows.length() > 0, rows[-1].id, "").to(str)


def _other_branch_hint() -> rx.Component:
    """A reply was written on another branch since this tab chose its own: offer, not jump."""
    return rx.cond(
        shown_on_branch(ChatTabState.view_leaf_id)
        & (SharedConversationState.newest_id != ChatTabState.seen_newest_id),
        rx.button(
            rx.icon("git-branch", size=14),
            "New reply on another branch",
            size="1",
            variant="soft",
            on_click=ChatTabState.show_newest,
            id="other-branch-hint",
            align_self="center",
        ),
    )


def _transcript() -> rx.Component:
    return rx.box(
        rx.vstack(
            rx.cond(
                SharedConversationState.has_earlier & ChatTabState.earlier_has_more,
                rx.button(
                    "Load earlier messages",
                    variant="ghost",
                    size="1",
                    on_click=ChatTabState.load_earlier,
                    id="load-earlier",
                ),
            ),
            rx.foreach(ChatTabState.earlier, message_view),
            rx.foreach(shown_rows(ChatTabState.view_leaf_id), message_view),
            _other_branch_hint(),
            rx.cond(
                SharedConversationState.queued > 0,
                rx.badge(
                    SharedConversationState.queued,
                    " queued — will run after the current reply",
                    color_scheme="blue",
                    id="queued-indicator",
                ),
            ),
            rx.cond(
                SharedConversationState.error != "",
                rx.callout(
                    SharedConversationState.error,
                    icon="triangle-alert",
                    color_scheme="red",
                    id="run-error",
                ),
            ),
            rx.cond(
                shown_rows(ChatTabState.view_leaf_id).length() == 0,
                rx.center(
                    rx.text("Send a message to start.", color_scheme="gray"),
                    padding="4rem",
                    width="100%",
                ),
            ),
            spacing="4",
            max_width="52rem",
            margin="0 auto",
            width="100%",
            class_name="transcript-column",  # padding: assets/layout.css
            # One polite live region for the whole conversation, busy while a reply streams:
            # a screen reader reads the finished reply once, not every batch of tokens.
            role="log",
            aria_live="polite",
            aria_busy=SharedConversationState.streaming,
            aria_label="Messages",
        ),
        id="transcript",
        flex="1",
        overflow_y="auto",
        width="100%",
    )


def _refused_before_upload(rejections: rx.Var) -> rx.event.EventSpec:
    """Say which files the picker refused (type or size) and why: nothing was uploaded."""
    limit = ChatTabState.attachment_limit_bytes
    message = rx.Var(
        _js_expr=(
            f"({rejections!s}).map((r) => {{"
            " const name = r.file?.name ?? r.file?.path ?? 'A file';"
            " const codes = (r.errors ?? []).map((e) => e.code);"
            " if (codes.includes('file-too-large')) return `${name} is"
            " ${(r.file?.size ?? 0).toLocaleString('en')} bytes; the limit is"
            f" ${{({limit!s}).toLocaleString('en')}} bytes. Not attached.`;"
            " if (codes.includes('file-invalid-type')) return `${name} cannot be attached:"
            f" attach {ATTACHMENT_KINDS} files.`;"
            " return `${name}: ${(r.errors ?? []).map((e) => e.message).join(', ')}`;"
            " }).join(' ')"
        ),
        _var_data=var_data_of(limit),
    ).to(str)
    return rx.toast.error(message, id="upload-refused")


def _composer() -> rx.Component:
    return rx.vstack(
        rx.cond(
            ChatTabState.input_error != "",
            rx.text(ChatTabState.input_error, color_scheme="red", size="2", id="input-error"),
        ),
        rx.hstack(
            rx.foreach(
                ChatTabState.pending_images,
                lambda url, i: rx.box(
                    rx.image(src=url, height="3rem", border_radius="var(--radius-2)"),
                    rx.icon_button(
                        rx.icon("x", size=10),
                        size="1",
                        variant="soft",
                        on_click=ChatTabState.remove_image(i),
                        aria_label="Remove image",
                    ),
                    position="relative",
                ),
            ),
            id="pending-images",
        ),
        rx.hstack(
            rx.foreach(
                ChatTabState.pending_files,
                lambda chip, i: file_chip(
                    chip,
                    rx.icon_button(
                        rx.icon("x", size=10),
                        size="1",
                        variant="ghost",
                        on_click=ChatTabState.remove_file(i),
                        aria_label="Remove attachment",
                    ),
                ),
            ),
            id="pending-files",
            wrap="wrap",
        ),
        rx.hstack(
            accessible_upload(
                rx.icon_button(
                    rx.icon("paperclip", size=16), variant="ghost", aria_label="Attach files"
                ),
                id=UPLOAD_ID,
                accept=ATTACHMENT_ACCEPT,
                max_size=ChatTabState.attachment_limit_bytes,
                on_drop=ChatTabState.handle_upload(rx.upload_files(upload_id=UPLOAD_ID)),
                on_drop_rejected=_refused_before_upload,
                border="none",
                padding="0",
            ),
            rx.text_area(
                placeholder="Message… (Enter to send, Shift+Enter for a new line, Esc to stop)",
                rows="2",
                flex="1",
                id="composer",
                auto_focus=True,
                aria_label="Message",
                **typing_reporter(),
            ),
            # Send stays available while a reply streams: the new message queues behind it.
            rx.cond(
                SharedConversationState.streaming,
                rx.button(
                    rx.icon("square", size=14),
                    "Stop",
                    color_scheme="gray",
                    variant="soft",
                    on_click=ChatTabState.stop,
                    id="stop",
                ),
            ),
            rx.button(
                rx.icon("arrow-up", size=14),
                "Send",
                id="send",
                on_click=ChatTabState.send(COMPOSER_VALUE),
            ),
            width="100%",
            align="end",
        ),
        context_meter(),
        max_width="52rem",
        margin="0 auto",
        width="100%",
        # Never shrunk, last in the column: above the on-screen keyboard (assets/layout.css).
        class_name="composer",
    )


def chat_view() -> rx.Component:
    """The open chat; a shared chat this tab lost shows only why (``lost_notice``)."""
    return rx.cond(ChatTabState.lost_notice != "", lost_notice(), _chat_view())


def _chat_view() -> rx.Component:
    return rx.vstack(
        # Which chat this tab is linked to (tests wait on it before typing).
        rx.el.span(SharedConversationState.chat_id, id="open-chat-id", display="none"),
        rx.cond(
            SharedConversationState.deleted,
            rx.box(on_mount=ChatTabState.leave_deleted_chat, id="deleted-watch"),
        ),
        _header(),
        temporary_banner(),
        _transcript(),
        rx.cond(ChatTabState.role == "viewer", viewer_notice(), _composer()),
        share_dialog(),
        spacing="0",
        width="100%",
        class_name="chat-view",
    )
