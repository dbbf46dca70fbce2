"""One message bubble: markdown rendered safely, images, tool calls, branch navigation."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.copy_button import CopyButton
from chatsapp.components.edit_form import edit_form
from chatsapp.components.markdown import safe_markdown
from chatsapp.components.sent_time import SentTime
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.rows import EntryRow, FileRow, ToolRow
from chatsapp.states.shared_conversation import SharedConversationState
from chatsapp.states.shown_vars import streamed_text


def _tool(tool: ToolRow) -> rx.Component:
    return rx.box(
        rx.text(rx.icon("wrench", size=12), " ", tool.name, size="1", weight="bold"),
        rx.text(tool.input, size="1", color_scheme="gray", class_name="tool-input"),
        rx.cond(tool.output != "", rx.text("→ ", tool.output, size="1", class_name="tool-output")),
        padding="0.4rem 0.6rem",
        border="1px dashed var(--gray-a6)",
        border_radius="var(--radius-2)",
        class_name="tool-call",
    )


def file_chip(file: FileRow, *extra: rx.Component) -> rx.Component:
    """An attached document: its name and size; a link that downloads its bytes when stored."""
    label = rx.hstack(
        rx.icon("file-text", size=14),
        rx.text(file.name, size="1", weight="medium", class_name="file-name"),
        rx.text(file.size, size="1", color_scheme="gray", class_name="file-size"),
        spacing="1",
        align="center",
    )
    return rx.hstack(
        rx.cond(
            file.url != "",
            rx.el.a(
                label,
                href=file.url,
                download=file.name,
                title="Download " + file.name,
                class_name="file-download",
                style={"color": "inherit", "text_decoration": "none"},
            ),
            label,
        ),
        *extra,
        padding="0.25rem 0.5rem",
        border="1px solid var(--gray-a6)",
        border_radius="var(--radius-3)",
        background="var(--gray-a2)",
        align="center",
        spacing="1",
        class_name="file-chip",
    )


def _branch_nav(entry: EntryRow) -> rx.Component:
    return rx.cond(
        entry.position != "",
        rx.hstack(
            rx.icon_button(
                rx.icon("chevron-left", size=12),
                size="1",
                variant="ghost",
                disabled=entry.prev_sibling_id == "",
                on_click=ChatTabState.show_sibling(entry.prev_sibling_id),
                class_name="branch-prev",
                aria_label="Previous version",
            ),
            rx.text(entry.position, size="1", class_name="branch-position"),
            rx.icon_button(
                rx.icon("chevron-right", size=12),
                size="1",
                variant="ghost",
                disabled=entry.next_sibling_id == "",
                on_click=ChatTabState.show_sibling(entry.next_sibling_id),
                class_name="branch-next",
                aria_label="Next version",
            ),
            spacing="1",
            align="center",
        ),
    )


def _copy_and_time(entry: EntryRow) -> rx.Component:
    """Copy the message's text (with a "Copied" confirmation) and when it was sent."""
    return rx.cond(
        entry.pending,
        rx.fragment(),
        rx.hstack(
            CopyButton.create(text=entry.text, label="Copy message", class_name="copy-message"),
            rx.cond(
                entry.author != "",
                rx.text(
                    rx.cond(entry.role == "user", "", "asked by "),
                    entry.author,
                    size="1",
                    weight="medium",
                    class_name="message-author",
                ),
            ),
            SentTime.create(at=entry.sent_at),
            rx.cond(
                entry.model_label != "",
                rx.text(entry.model_label, size="1", color_scheme="gray", class_name="reply-model"),
            ),
            rx.cond(
                entry.usage_label != "",
                rx.text(entry.usage_label, size="1", color_scheme="gray", class_name="reply-usage"),
            ),
            spacing="2",
            align="center",
        ),
    )


def _fork(entry: EntryRow) -> rx.Component:
    return rx.icon_button(
        rx.icon("git-fork", size=12),
        size="1",
        variant="ghost",
        on_click=ChatTabState.fork_from(entry.id),
        class_name="fork-message",
        aria_label="Fork from here",
        title="Fork from here: a new chat holding the conversation up to this message",
    )


def _actions(entry: EntryRow) -> rx.Component:
    return rx.hstack(
        _branch_nav(entry),
        _copy_and_time(entry),
        rx.cond(
            entry.pending,
            rx.fragment(),
            rx.cond(
                entry.role == "assistant",
                rx.hstack(
                    rx.icon_button(
                        rx.icon("refresh-cw", size=12),
                        size="1",
                        variant="ghost",
                        on_click=ChatTabState.regenerate(entry.id),
                        class_name="regenerate",
                        aria_label="Regenerate",
                    ),
                    spacing="1",
                ),
                rx.icon_button(
                    rx.icon("pencil", size=12),
                    size="1",
                    variant="ghost",
                    on_click=ChatTabState.start_edit(entry.id, entry.text),
                    class_name="edit-message",
                    aria_label="Edit",
                ),
            ),
        ),
        rx.cond(entry.pending, rx.fragment(), _fork(entry)),
        spacing="2",
    )


def _editor() -> rx.Component:
    """The edit box of a sent message."""
    return edit_form(
        rx.text_area(
            name="text",
            default_value=ChatTabState.edit_text,
            width="100%",
            rows="3",
            class_name="edit-box",
            aria_label="Edit message",
        ),
        save_label="Save & submit",
        save_class="edit-submit",
        on_cancel=ChatTabState.cancel_edit,
        on_submit=ChatTabState.submit_edit_form,
    )


def _pending_reply(entry: EntryRow) -> rx.Component:
    """A reply not written yet: the live stream when it is this one, else a queued marker."""
    is_streaming = SharedConversationState.streaming & (
        SharedConversationState.streaming_message_id == entry.id
    )
    # Text saved so far (a reload mid-stream, or a reply streaming on another worker) is shown
    # until this tab's live stream takes over.
    streamed = streamed_text()
    shown = rx.cond(is_streaming & (streamed != ""), streamed, entry.text)
    return rx.cond(
        shown != "",
        rx.box(safe_markdown(shown), id="streaming-reply"),
        rx.hstack(
            rx.spinner(size="1"),
            rx.text(
                rx.cond(
                    entry.status == "queued",
                    "Queued — runs after the current reply",
                    "Thinking…",
                ),
                size="2",
                color_scheme="gray",
            ),
            class_name="pending-reply",
        ),
    )


def _attached_image(url: rx.Var[str]) -> rx.Component:
    """An image part: inline only when it is the app's own attachment (``data:``/``blob:``).

    An imported message's part may name any address; the browser would fetch it on every
    view, with the viewer's cookie when it is this app's own (``/export/all.zip``).
    """
    return rx.cond(
        url.startswith("data:") | url.startswith("blob:"),
        rx.image(src=url, max_width="18rem", border_radius="var(--radius-3)"),
        rx.el.span("[image not shown]", class_name="image-not-shown"),
    )


def message_view(entry: EntryRow) -> rx.Component:
    is_user = entry.role == "user"
    highlighted = ChatTabState.highlight_message_id == entry.id
    bubble = rx.box(
        rx.cond(
            entry.is_summary,
            rx.callout(
                "Earlier turns were compacted into this summary.",
                icon="archive",
                size="1",
                class_name="compaction-marker",
            ),
        ),
        rx.cond(
            (ChatTabState.editing_message_id == entry.id) & is_user,
            _editor(),
            rx.cond(
                entry.pending,
                _pending_reply(entry),
                safe_markdown(entry.text, class_name="message-text"),
            ),
        ),
        rx.foreach(entry.images, _attached_image),
        rx.cond(
            entry.files.length() > 0,
            rx.hstack(
                rx.foreach(entry.files, lambda f: file_chip(f)),
                wrap="wrap",
                class_name="message-files",
            ),
        ),
        rx.foreach(entry.tools, _tool),
        rx.cond(
            entry.status == "cancelled",
            rx.badge("stopped", color_scheme="gray", class_name="status-cancelled"),
        ),
        rx.cond(
            entry.status == "failed",
            rx.hstack(
                rx.badge(
                    rx.cond(entry.error != "", "incomplete: " + entry.error, "incomplete"),
                    color_scheme="red",
                    white_space="normal",
                    class_name="failure-reason",
                ),
                rx.button(
                    rx.icon("rotate-ccw", size=12),
                    "Retry",
                    size="1",
                    variant="soft",
                    on_click=ChatTabState.regenerate(entry.id),
                    class_name="retry",
                ),
                align="center",
            ),
        ),
        padding="0.6rem 0.9rem",
        border_radius="var(--radius-4)",
        background=rx.cond(is_user, "var(--accent-a3)", "transparent"),
        outline=rx.cond(highlighted, "2px solid var(--amber-8)", "none"),
        max_width="min(46rem, 100%)",  # never wider than a phone's column
        width=rx.cond(is_user, "auto", "100%"),
    )
    return rx.vstack(
        bubble,
        _actions(entry),
        align=rx.cond(is_user, "end", "start"),
        width="100%",
        spacing="1",
        id="msg-" + entry.id,
        class_name=rx.cond(is_user, "message message-user", "message message-assistant"),
        custom_attrs={"data-message-id": entry.id},
    )
