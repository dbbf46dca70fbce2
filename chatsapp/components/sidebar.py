"""The sidebar: new chat (or "New chat with ▾" an agent, or a temporary chat), title search,
the "Pinned" group and the chat list with rename/pin/archive/delete, message search, and the
collapsible "Archived" section.

On phones it is a drawer (opened by :func:`drawer_button`); its layout is ``assets/layout.css``.
"""

from __future__ import annotations

import reflex as rx

from chatsapp.chat_route import chat_path
from chatsapp.components.auth_pages import sign_out_button
from chatsapp.components.chat_row import ONE_LINE, chat_item
from chatsapp.components.projects import projects_section
from chatsapp.components.sharing import shared_with_me_section
from chatsapp.states.account import AccountTabState
from chatsapp.states.archive import SharedArchiveState
from chatsapp.states.directory import PAGE_SIZE, SharedDirectoryState, SidebarTabState
from chatsapp.states.newest import SEARCH_DEBOUNCE_MS
from chatsapp.states.projects import SharedProjectsState
from chatsapp.states.rows import AgentChoiceRow, ChatRow, HitRow, SnippetPiece
from chatsapp.states.search import SearchTabState

# The search boxes start from the state's query but are not bound to it (``default_value``):
# a bound box takes each echo of the query back from the server, and an echo of what was typed
# before a pause arrives after the keystrokes that followed it and erases them (seen in
# production builds under load). The box keeps what is typed; the state follows, debounced.


def _snippet(piece: SnippetPiece) -> rx.Component:
    return rx.cond(piece.hit, rx.el.mark(piece.text), rx.text.span(piece.text))


def _hit(hit: HitRow) -> rx.Component:
    return rx.link(
        rx.vstack(
            rx.hstack(
                rx.text(hit.title, size="1", weight="bold"),
                rx.cond(
                    hit.archived,
                    rx.badge("archived", size="1", color_scheme="gray", class_name="hit-archived"),
                ),
                rx.cond(
                    hit.shared_by != "",
                    rx.badge(
                        "shared by " + hit.shared_by,
                        size="1",
                        color_scheme="blue",
                        class_name="hit-shared",
                    ),
                ),
                spacing="1",
                align="center",
            ),
            rx.text(rx.foreach(hit.pieces, _snippet), size="1", class_name="hit-snippet"),
            spacing="0",
            align="start",
        ),
        href=chat_path(hit.chat_id, hit.message_id),
        underline="none",
        color="inherit",
        padding="0.35rem 0.5rem",
        border_radius="var(--radius-2)",
        _hover={"background": "var(--gray-a4)"},
        class_name="message-hit",
        width="100%",
    )


def _message_search() -> rx.Component:
    return rx.cond(
        SearchTabState.message_search_open,
        rx.vstack(
            rx.form(
                rx.input(
                    placeholder="Search all messages…",
                    default_value=SearchTabState.message_query,  # unbound: see the note on top
                    on_change=SearchTabState.set_message_query.debounce(SEARCH_DEBOUNCE_MS),
                    size="2",
                    width="100%",
                    id="message-search",
                    aria_label="Search all messages",
                ),
                on_submit=lambda _form: SearchTabState.run_message_search(),
                width="100%",
            ),
            rx.cond(
                SearchTabState.message_search_incomplete,
                rx.text(
                    "Still indexing… some messages are found by their words only.",
                    size="1",
                    color_scheme="gray",
                    id="message-search-incomplete",
                    role="status",
                ),
            ),
            rx.foreach(SearchTabState.message_hits, _hit),
            width="100%",
            spacing="1",
        ),
    )


def _undo_bar() -> rx.Component:
    return rx.cond(
        SidebarTabState.undo_chat_id != "",
        rx.hstack(
            rx.text("Deleted “", SidebarTabState.undo_title, "”", size="1", trim="both"),
            rx.spacer(),
            rx.button(
                "Undo",
                size="1",
                variant="soft",
                on_click=SidebarTabState.undo_delete,
                id="undo-delete",
                custom_attrs={"data-drawer-close": ""},  # it opens the chat it brings back
            ),
            width="100%",
            padding="0.5rem",
            background="var(--gray-a3)",
            border_radius="var(--radius-2)",
            align="center",
            id="undo-bar",
        ),
    )


def _first_page() -> rx.Component:
    """The shared first page: one component per slot, placed by CSS ``order``.

    Each slot renders from its own var, so a rename delivers (and React diffs) one row;
    see :class:`SharedDirectoryState` for why the page is slots and not a list.
    """
    slots = []
    for k in range(PAGE_SIZE):
        row: ChatRow = getattr(SharedDirectoryState, f"slot_{k}")
        slots.append(
            rx.cond(
                # A chat in a project is listed in its group (chatsapp.components.projects).
                (row.id != "") & ~SharedProjectsState.member_ids.contains(row.id),
                rx.box(chat_item(row), order=SharedDirectoryState.positions[k], width="100%"),
            )
        )
    return rx.flex(*slots, direction="column", gap="var(--space-1)", width="100%")


def _pinned_group() -> rx.Component:
    """The "Pinned" group above the list, newest pin first; each chat shows here only."""
    return rx.cond(
        SharedDirectoryState.pinned.length() > 0,
        rx.vstack(
            rx.hstack(
                rx.icon("pin", size=12),
                rx.text("Pinned", size="1", weight="medium"),
                color="var(--gray-11)",
                align="center",
                spacing="1",
            ),
            rx.foreach(SharedDirectoryState.pinned, chat_item),
            spacing="1",
            width="100%",
            id="pinned-chats",
            role="group",
            aria_label="Pinned chats",
        ),
    )


def _chat_list() -> rx.Component:
    searching = SearchTabState.title_query.strip() != ""
    # A plain overflow box: Radix ScrollArea lays its content out as a table that grows to
    # the widest row, which pushed long titles (and the row menu) out of view.
    return rx.box(
        rx.vstack(
            rx.cond(
                searching,
                rx.foreach(SearchTabState.title_results, chat_item),
                rx.fragment(
                    _pinned_group(),
                    _first_page(),
                    rx.foreach(SidebarTabState.more_chats, chat_item),
                    rx.cond(
                        SharedDirectoryState.loaded & (SharedDirectoryState.count == 0),
                        rx.text(
                            "No chats yet", size="2", color_scheme="gray", id="chat-list-empty"
                        ),
                    ),
                    rx.cond(
                        ~SharedDirectoryState.loaded,
                        rx.vstack(
                            *[rx.skeleton(height="2.2rem", width="100%") for _ in range(5)],
                            width="100%",
                        ),
                    ),
                    rx.cond(
                        SidebarTabState.has_more & (SharedDirectoryState.count >= PAGE_SIZE),
                        rx.box(
                            height="1px",
                            on_mount=SidebarTabState.load_more,
                            id="load-more-sentinel",
                        ),
                    ),
                ),
            ),
            spacing="1",
            width="100%",
            id="chat-list",
        ),
        flex="1",
        overflow_y="auto",
        overflow_x="hidden",
        width="100%",
        on_scroll=SidebarTabState.load_more.debounce(300),
        id="loose-chats",  # a chat dragged out of a project lands here (projects_drag.js)
    )


def _archived_item(row: ChatRow) -> rx.Component:
    return chat_item(row, label_archived=False)


def _archived_section() -> rx.Component:
    """Archived chats, collapsed by default; its own title filter; unarchive from a row's menu."""
    filtering = SearchTabState.archived_query.strip() != ""
    return rx.vstack(
        rx.button(
            rx.icon(
                rx.cond(SidebarTabState.archived_open, "chevron-down", "chevron-right"), size=14
            ),
            rx.icon("archive", size=14),
            "Archived",
            variant="ghost",
            size="1",
            on_click=SidebarTabState.toggle_archived,
            id="toggle-archived",
            aria_expanded=SidebarTabState.archived_open,
        ),
        rx.cond(
            SidebarTabState.archived_open,
            rx.vstack(
                rx.input(
                    rx.input.slot(rx.icon("search", size=14)),
                    placeholder="Filter archived chats",
                    default_value=SearchTabState.archived_query,  # unbound: see the note on top
                    on_change=SearchTabState.set_archived_query.debounce(SEARCH_DEBOUNCE_MS),
                    size="1",
                    width="100%",
                    id="archived-filter",
                ),
                rx.cond(
                    filtering,
                    rx.foreach(SearchTabState.archived_results, _archived_item),
                    rx.foreach(SharedArchiveState.rows, _archived_item),
                ),
                rx.cond(
                    rx.cond(
                        filtering,
                        SearchTabState.archived_results.length() == 0,
                        SharedArchiveState.loaded & (SharedArchiveState.rows.length() == 0),
                    ),
                    rx.text(
                        rx.cond(filtering, "No archived chat matches", "No archived chats"),
                        size="1",
                        color_scheme="gray",
                        id="archived-empty",
                    ),
                ),
                spacing="1",
                width="100%",
                max_height="40vh",
                overflow_y="auto",
                id="archived-list",
            ),
        ),
        spacing="1",
        width="100%",
        id="archived-section",
    )


def _agent_choice(choice: AgentChoiceRow) -> rx.Component:
    return rx.menu.item(
        rx.text(choice.name, style=ONE_LINE, flex="1", min_width="0"),
        rx.cond(choice.is_default, rx.text("default", size="1", color_scheme="gray")),
        on_click=SidebarTabState.create_chat_with(choice.id),
        class_name="new-chat-agent",
        # It starts a chat, like "New chat": on a phone the drawer closes (assets/drawer.js).
        custom_attrs={"data-agent-id": choice.id, "data-drawer-close": ""},
    )


def _new_chat_buttons() -> rx.Component:
    """ "New chat" (the default agent) and "▾": a new chat with an agent picked from a menu."""
    return rx.hstack(
        rx.button(
            rx.icon("square-pen", size=16),
            "New chat",
            rx.spacer(),
            rx.text("Ctrl ⇧ O", size="1", color_scheme="gray", class_name="shortcut-hint"),
            flex="1",
            variant="soft",
            on_click=SidebarTabState.create_chat,
            id="new-chat",
        ),
        rx.menu.root(
            rx.menu.trigger(
                rx.icon_button(
                    rx.icon("chevron-down", size=16),
                    variant="soft",
                    aria_label="New chat with…",
                    id="new-chat-with",
                ),
            ),
            rx.menu.content(
                rx.text("New chat with", size="1", color_scheme="gray", padding="0.25rem 0.5rem"),
                rx.foreach(SidebarTabState.agent_choices, _agent_choice),
                id="new-chat-agents",
                class_name="agent-menu",
            ),
            on_open_change=SidebarTabState.load_agent_choices,
        ),
        rx.tooltip(
            rx.icon_button(
                rx.icon("timer", size=16),
                variant="soft",
                color_scheme="amber",
                on_click=SidebarTabState.create_temporary_chat,
                aria_label="Temporary chat",
                id="new-temporary-chat",
                custom_attrs={"data-drawer-close": ""},  # it opens the new chat
            ),
            content="Temporary chat: not listed, searched or remembered; gone when closed",
        ),
        spacing="1",
        width="100%",
    )


def _account_footer() -> rx.Component:
    """Who is signed in here, their account page, the admin page for admins, sign-out."""
    return rx.hstack(
        rx.link(
            rx.hstack(
                rx.icon("circle-user", size=16, flex_shrink="0"),
                rx.text(
                    AccountTabState.username,
                    size="2",
                    id="account-name",
                    trim="both",
                    style=ONE_LINE,  # a long name is cut short, the buttons beside it stay
                ),
                align="center",
                spacing="2",
                min_width="0",
            ),
            href="/account",
            # The visible name first, so a person who says what they see ("ada") finds it.
            aria_label=AccountTabState.username + ", your account",
            min_width="0",
        ),
        rx.spacer(),
        rx.link(
            rx.icon("settings", size=16), href="/settings", aria_label="Settings", id="to-settings"
        ),
        rx.cond(
            AccountTabState.is_admin,
            rx.link(rx.icon("shield", size=16), href="/admin", aria_label="Admin", id="to-admin"),
        ),
        rx.cond(AccountTabState.auth_mode == "local", sign_out_button(size="1")),
        width="100%",
        align="center",
        spacing="2",  # room for a name beside the buttons in a tablet's narrower sidebar
        id="account-footer",
    )


def sidebar() -> rx.Component:
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.heading("Chats", size="5"),
                rx.spacer(),
                rx.color_mode.button(size="1", variant="ghost", aria_label="Toggle dark mode"),
                width="100%",
                align="center",
            ),
            _new_chat_buttons(),
            rx.input(
                rx.input.slot(rx.icon("search", size=14)),
                placeholder="Search titles",
                default_value=SearchTabState.title_query,  # unbound: see the note on top
                on_change=SearchTabState.set_title_query.debounce(SEARCH_DEBOUNCE_MS),
                size="2",
                width="100%",
                id="title-search",
                aria_label="Search chat titles",
            ),
            rx.cond(
                SearchTabState.search_error != "",
                rx.text(
                    SearchTabState.search_error, size="1", color_scheme="red", id="search-error"
                ),
            ),
            rx.button(
                rx.icon("text-search", size=14),
                "Search all messages",
                variant="ghost",
                size="1",
                on_click=SearchTabState.toggle_message_search,
                id="toggle-message-search",
            ),
            _message_search(),
            _undo_bar(),
            shared_with_me_section(),
            projects_section(),
            _chat_list(),
            _archived_section(),
            _account_footer(),
            spacing="3",
            padding="1rem",
            height="100%",
        ),
        id="sidebar",
        # Its width, and the phone drawer it becomes under 768 px, are in assets/layout.css.
        # Collapsing (the toggle on wider screens) is this tab's state; the CSS applies it.
        custom_attrs={"data-collapsed": SidebarTabState.collapsed},
        tab_index=-1,  # the opened drawer takes focus, so a screen reader starts inside it
        role="navigation",
        aria_label="Chats",
        border_right="1px solid var(--gray-a5)",
        background="var(--gray-a2)",
    )


def drawer_button(class_name: str = "") -> rx.Component:
    """The phone's menu button: opens the sidebar drawer (``assets/drawer.js``, no round trip).

    Shown only under 768 px (``assets/layout.css``), where the sidebar is a drawer.
    """
    return rx.icon_button(
        rx.icon("menu", size=18),
        variant="ghost",
        aria_label="Open the chat list",
        class_name=f"drawer-button {class_name}".strip(),
        custom_attrs={
            "data-drawer-toggle": "",
            "aria-controls": "sidebar",
            "aria-expanded": "false",
        },
    )
