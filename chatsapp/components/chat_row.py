"""One row of the chat list (the first page, further pages, title results, Archived).

The row is a memo (:func:`chat_row`) fed only plain values, so React re-renders a row only
when *its* values change: a rename in a 40-row list re-renders one row. Written inline, each
of the ~400 compiled pieces of the 40 rows subscribed to the whole list's state and every
change re-rendered them all, in every tab.
"""

from __future__ import annotations

import reflex as rx

from chatsapp.chat_route import chat_path
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SidebarTabState
from chatsapp.states.projects import ProjectsTabState
from chatsapp.states.rows import ChatRow

# A one-line text cut short with an ellipsis (titles, previews, names).
ONE_LINE = {"overflow": "hidden", "white_space": "nowrap", "text_overflow": "ellipsis"}


def row_menu(class_name: str, label: str, *items: rx.Component) -> rx.Component:
    """A row's "…" menu (a chat's, a project's): its trigger, named ``label``, and ``items``."""
    return rx.menu.root(
        rx.menu.trigger(
            rx.icon_button(
                rx.icon("ellipsis", size=14),
                size="1",
                variant="ghost",
                class_name=class_name,
                aria_label=label,
            ),
        ),
        rx.menu.content(*items),
    )


def chat_item(row: ChatRow, *, label_archived: bool = True) -> rx.Component:
    """One chat row; ``label_archived=False`` in the Archived section, where every row is.

    The row itself is a memo (:func:`chat_row`) fed only plain values, so it re-renders when
    *its* row, its selection or its label changes: a rename in a 40-row list re-renders one
    row, not all 40 (each inline row subscribed to the whole list's state).
    """
    return rx.cond(
        SidebarTabState.editing_id == row.id,
        # Not bound to the state (``default_value``): the title travels with the commit, and
        # typing sends nothing. Escape clicks the hidden cancel button (assets/keys.js).
        rx.form(
            rx.input(
                name="title",
                default_value=SidebarTabState.edit_title,
                on_blur=SidebarTabState.commit_rename,
                auto_focus=True,
                size="2",
                width="100%",
                class_name="rename-input",
                aria_label="Chat title",
            ),
            rx.el.button(
                type="button",
                on_click=SidebarTabState.cancel_rename,
                class_name="cancel-rename",
                hidden=True,
                tab_index=-1,
                aria_hidden="true",
            ),
            on_submit=SidebarTabState.submit_rename,
            width="100%",
        ),
        chat_row(
            row=row,
            active=ChatTabState.active_chat_id == row.id,
            label_archived=label_archived,
        ),
    )


@rx.memo
def chat_row(
    row: rx.Var[ChatRow], active: rx.Var[bool], label_archived: rx.Var[bool]
) -> rx.Component:
    """A chat's link (title, archived badge, age, preview) and its
    Rename/Pin/Archive/Delete menu."""
    return rx.hstack(
        rx.link(
            rx.vstack(
                rx.hstack(
                    rx.text(
                        row.title,
                        size="2",
                        weight="medium",
                        style=ONE_LINE,
                        class_name="chat-title",
                        flex="1",
                        min_width="0",
                    ),
                    rx.cond(
                        label_archived & row.archived,
                        rx.badge("archived", size="1", color_scheme="gray", flex_shrink="0"),
                    ),
                    rx.moment(
                        row.updated_iso,
                        from_now=True,
                        font_size="0.7rem",
                        color="var(--gray-11)",  # gray-10 is under 4.5:1 on a selected row
                        flex_shrink="0",
                    ),
                    width="100%",
                    align="baseline",
                    spacing="2",
                ),
                rx.text(
                    row.preview,
                    size="1",
                    color_scheme="gray",
                    style=ONE_LINE,
                    class_name="chat-preview",
                    width="100%",
                ),
                spacing="0",
                align="start",
                width="100%",
            ),
            href=chat_path(row.id),
            underline="none",
            color="inherit",
            flex="1",
            min_width="0",
        ),
        row_menu(
            "chat-menu",
            "Chat actions",
            rx.menu.item(
                "Rename",
                on_click=SidebarTabState.start_rename(row.id, row.title),
                class_name="rename-chat",
            ),
            rx.cond(
                row.pinned,
                rx.menu.item(
                    "Unpin",
                    on_click=SidebarTabState.unpin_chat(row.id),
                    class_name="unpin-chat",
                ),
                rx.menu.item(
                    "Pin",
                    on_click=SidebarTabState.pin_chat(row.id),
                    class_name="pin-chat",
                ),
            ),
            rx.cond(
                row.archived,
                rx.menu.item(
                    "Unarchive",
                    on_click=SidebarTabState.unarchive_chat(row.id),
                    class_name="unarchive-chat",
                ),
                rx.menu.item(
                    "Archive",
                    on_click=SidebarTabState.archive_chat(row.id),
                    class_name="archive-chat",
                ),
            ),
            rx.menu.item(
                "Move to project…",
                on_click=ProjectsTabState.start_move(row.id, row.title),
                class_name="move-chat",
            ),
            rx.menu.item(
                "Delete",
                color="red",
                on_click=SidebarTabState.delete_chat(row.id, row.title),
                class_name="delete-chat",
            ),
        ),
        padding="0.4rem 0.5rem",
        border_radius="var(--radius-2)",
        background=rx.cond(active, "var(--accent-a4)", "transparent"),
        _hover={"background": "var(--gray-a4)"},
        width="100%",
        align="center",
        class_name="chat-item",
        custom_attrs={"data-chat-id": row.id},
    )
