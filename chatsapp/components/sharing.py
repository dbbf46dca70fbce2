"""Shared chats in the page: "Shared with me" in the sidebar, the share dialog, who is here
and who is typing in the header, a viewer's read-only composer, and a lost chat's notice."""

from __future__ import annotations

import reflex as rx

from chatsapp.chat_route import chat_path
from chatsapp.states.chat_people import (
    TYPING_THROTTLE_MS,
    ChatPeopleTabState,
    MemberRow,
    SharedChatPeopleState,
)
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.share_dialog import OWNER_CONTEXT_EXPOSES, LinkRow, ShareDialogTabState
from chatsapp.states.share_links import LinkEndTabState
from chatsapp.states.shared_with_me import SharedChatRow, SharedWithMeState

ONE_LINE = {"overflow": "hidden", "white_space": "nowrap", "text_overflow": "ellipsis"}
ROLE_CHOICES = ["participant", "viewer"]


# ── the sidebar ─────────────────────────────────────────────────────


def _shared_row(row: SharedChatRow) -> rx.Component:
    return rx.link(
        rx.vstack(
            rx.text(row.title, size="2", weight="medium", style=ONE_LINE, width="100%"),
            rx.text(row.owner_username, " · ", row.role, size="1", color_scheme="gray"),
            spacing="0",
            width="100%",
        ),
        href=chat_path(row.chat_id),
        underline="none",
        color="inherit",
        width="100%",
        padding="0.35rem 0.5rem",
        border_radius="var(--radius-2)",
        background=rx.cond(ChatTabState.active_chat_id == row.chat_id, "var(--gray-a4)", ""),
        class_name="shared-chat-row",
        custom_attrs={"data-chat-id": row.chat_id, "data-drawer-close": ""},
    )


def shared_with_me_section() -> rx.Component:
    """The chats others shared with this person, with each owner's name (live)."""
    return rx.cond(
        SharedWithMeState.rows.length() > 0,
        rx.vstack(
            rx.text("Shared with me", size="1", weight="bold", color_scheme="gray"),
            rx.foreach(SharedWithMeState.rows, _shared_row),
            spacing="1",
            width="100%",
            id="shared-with-me",
            role="region",
            aria_label="Shared with me",
        ),
    )


# ── the header ──────────────────────────────────────────────────────


def people_bar() -> rx.Component:
    """Who has the chat open now, and who is typing (shown once someone else is here)."""
    return rx.hstack(
        rx.cond(
            SharedChatPeopleState.present.length() > 1,
            rx.text(
                rx.icon("users", size=12),
                " ",
                SharedChatPeopleState.present.join(", "),
                size="1",
                color_scheme="gray",
                id="present-people",
                style=ONE_LINE,
            ),
        ),
        rx.cond(
            SharedChatPeopleState.typing.length() > 0,
            rx.text(
                SharedChatPeopleState.typing.join(", "),
                rx.cond(SharedChatPeopleState.typing.length() > 1, " are", " is"),
                " typing…",
                size="1",
                color_scheme="gray",
                id="typing-people",
                aria_live="polite",
            ),
        ),
        spacing="2",
        min_width="0",
        class_name="people-bar",
    )


def share_menu_items() -> rx.Component:
    """The chat menu's sharing entries: "Share…" for the owner, "Leave" for a member."""
    return rx.fragment(
        rx.cond(
            ChatTabState.role == "owner",
            rx.menu.item(
                "Share…", on_select=ShareDialogTabState.set_open(True), id="open-share-dialog"
            ),
        ),
        rx.cond(
            (ChatTabState.role == "participant") | (ChatTabState.role == "viewer"),
            rx.menu.item(
                "Leave this chat", on_select=ShareDialogTabState.leave, id="leave-shared-chat"
            ),
        ),
    )


# ── the share dialog ────────────────────────────────────────────────


def _member(row: MemberRow) -> rx.Component:
    is_owner = row.role == "owner"
    return rx.hstack(
        rx.text(row.username, size="2", flex="1", style=ONE_LINE),
        rx.cond(
            is_owner,
            rx.badge("owner"),
            rx.hstack(
                rx.select(
                    ROLE_CHOICES,
                    value=row.role,
                    on_change=lambda role: ShareDialogTabState.change_role(row.user_id, role),
                    size="1",
                    aria_label="Role",
                ),
                rx.icon_button(
                    rx.icon("x", size=12),
                    size="1",
                    variant="ghost",
                    on_click=ShareDialogTabState.remove_member(row.user_id),
                    aria_label="Remove " + row.username,
                    class_name="remove-member",
                ),
            ),
        ),
        width="100%",
        align="center",
        class_name="member-row",
        custom_attrs={"data-username": row.username},
    )


def _add_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.input(
                name="username",
                placeholder="Username",
                aria_label="Username to share with",
                id="share-username",
                flex="1",
            ),
            rx.select(ROLE_CHOICES, name="role", default_value="participant", size="2"),
            rx.button("Add", type="submit", id="share-add"),
            width="100%",
        ),
        on_submit=ShareDialogTabState.share,
        reset_on_submit=True,
        width="100%",
    )


def _link(row: LinkRow) -> rx.Component:
    return rx.hstack(
        rx.text(row.created_iso, " · ", row.message_count, " messages", size="1", flex="1"),
        rx.cond(row.includes_attachments, rx.badge("files")),
        rx.button(
            "Revoke",
            size="1",
            variant="soft",
            color_scheme="red",
            on_click=ShareDialogTabState.revoke_link(row.id),
            class_name="revoke-link",
        ),
        width="100%",
        align="center",
        class_name="share-link-row",
    )


def _link_end_chooser() -> rx.Component:
    """Which message the link ends at: the shown branch's, newest first (none chosen: the
    newest). Sent with the form as ``up_to``."""
    return rx.select.root(
        rx.select.trigger(
            placeholder="Up to the newest message",
            id="link-up-to",
            aria_label="The link ends at",
            max_width="100%",
            style=ONE_LINE,
        ),
        rx.select.content(
            rx.foreach(
                LinkEndTabState.ends,
                lambda end: rx.select.item(
                    end.label, value=end.id, class_name="link-end", style=ONE_LINE
                ),
            ),
            position="popper",
        ),
        name="up_to",
        size="1",
    )


def _links() -> rx.Component:
    return rx.vstack(
        rx.heading("Read-only links", size="2"),
        rx.text(
            "A snapshot of the branch shown, up to its newest message or the one you choose; "
            "anyone with the link can read it without an account, until you revoke it.",
            size="1",
            color_scheme="gray",
        ),
        rx.form(
            rx.vstack(
                _link_end_chooser(),
                rx.hstack(
                    rx.el.label(
                        rx.checkbox(name="attachments"), " Include attachments", font_size="0.8rem"
                    ),
                    rx.button("Create link", type="submit", size="1", id="create-link"),
                    align="center",
                ),
                spacing="2",
            ),
            on_submit=ShareDialogTabState.create_link,
        ),
        rx.cond(
            ShareDialogTabState.new_link_url != "",
            rx.hstack(
                rx.code(ShareDialogTabState.new_link_url, id="new-link-url"),
                rx.button(
                    "Copy",
                    size="1",
                    on_click=rx.set_clipboard(
                        rx.Var("window.location.origin").to(str) + ShareDialogTabState.new_link_url
                    ),
                ),
            ),
        ),
        rx.foreach(ShareDialogTabState.links, _link),
        width="100%",
        id="share-links",
        on_mount=LinkEndTabState.load,  # the dialog's content mounts each time it opens
    )


def share_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Share this chat"),
            rx.vstack(
                _add_form(),
                rx.cond(
                    ShareDialogTabState.error != "",
                    rx.text(
                        ShareDialogTabState.error, color_scheme="red", size="2", id="share-error"
                    ),
                ),
                rx.cond(
                    ShareDialogTabState.notice != "",
                    rx.text(
                        ShareDialogTabState.notice,
                        color_scheme="green",
                        size="2",
                        id="share-notice",
                    ),
                ),
                rx.text(
                    "Participants read and send; viewers only read. Only you rename, delete, "
                    "export or share it.",
                    size="1",
                    color_scheme="gray",
                ),
                rx.vstack(
                    rx.foreach(SharedChatPeopleState.members, _member),
                    width="100%",
                    id="share-members",
                ),
                rx.el.label(
                    rx.checkbox(
                        checked=ShareDialogTabState.owner_context,
                        on_change=ShareDialogTabState.set_owner_context,
                        id="owner-context",
                    ),
                    " Let this chat use my memory and other chats",
                    font_size="0.9rem",
                ),
                rx.text(OWNER_CONTEXT_EXPOSES, size="1", color_scheme="gray"),
                _links(),
                rx.dialog.close(rx.button("Done", variant="soft", id="share-done")),
                spacing="3",
                width="100%",
            ),
            id="share-dialog",
        ),
        open=ShareDialogTabState.open,
        on_open_change=ShareDialogTabState.set_open,
    )


# ── the composer and the page ───────────────────────────────────────


def typing_reporter() -> dict[str, object]:
    """The composer's props that tell the chat's people this person is typing (throttled)."""
    return {"on_key_down": ChatPeopleTabState.typing.throttle(TYPING_THROTTLE_MS)}


def viewer_notice() -> rx.Component:
    return rx.callout(
        "You can read this chat: its owner shared it with you as a viewer.",
        icon="eye",
        id="viewer-notice",
        width="100%",
    )


def lost_notice() -> rx.Component:
    """A shared chat this tab showed was taken away: only the reason stays on screen."""
    return rx.center(
        rx.vstack(
            rx.heading(ChatTabState.lost_notice, size="4"),
            rx.link("Back to your chats", href="/"),
            align="center",
        ),
        height="100%",
        width="100%",
        id="lost-chat",
    )
