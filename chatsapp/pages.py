"""Pages: ``/`` opens the most recent chat (or the empty state); one URL per chat."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.chat_view import chat_view
from chatsapp.components.memory_panel import memory_panel, memory_toggle
from chatsapp.components.sidebar import sidebar
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.home import HomeTabState
from chatsapp.states.memory import SharedMemoryState
from chatsapp.states.status import ModelTabState


def shell(main: rx.Component) -> rx.Component:
    return rx.hstack(
        rx.script(src="/keys.js"),
        rx.el.span(ModelTabState.worker, id="worker-id", display="none"),
        sidebar(),
        rx.box(
            rx.icon_button(
                rx.icon("panel-left", size=16),
                variant="ghost",
                on_click=SidebarTabState.toggle_sidebar,
                position="absolute",
                top="0.75rem",
                left="0.5rem",
                z_index="2",
                aria_label="Toggle sidebar",
                id="toggle-sidebar",
            ),
            main,
            id="main-pane",
            flex="1",
            height="100vh",
            overflow="hidden",
            position="relative",
        ),
        memory_panel(),
        spacing="0",
        width="100%",
    )


def _empty_state() -> rx.Component:
    return rx.center(
        rx.box(memory_toggle(), position="absolute", top="0.75rem", right="1.25rem"),
        rx.vstack(
            rx.heading("Start a conversation", size="6"),
            rx.text("Create a chat from the sidebar, or press Ctrl+Shift+O.", color_scheme="gray"),
            rx.button("New chat", on_click=SidebarTabState.create_chat, id="empty-new-chat"),
            align="center",
        ),
        height="100%",
        id="empty-state",
    )


def _missing_chat() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.heading("This chat does not exist", size="5"),
            rx.link("Back to your chats", href="/"),
            align="center",
        ),
        height="100%",
        id="missing-chat",
    )


ON_LOAD_COMMON = [SharedDirectoryState.link, SharedMemoryState.link, ModelTabState.load]


def index_page() -> rx.Component:
    return shell(_empty_state())


def chat_page() -> rx.Component:
    return shell(rx.cond(ChatTabState.missing, _missing_chat(), chat_view()))


def register(app: rx.App) -> None:
    app.add_page(
        index_page, route="/", title="Chats", on_load=[*ON_LOAD_COMMON, HomeTabState.open_latest]
    )
    app.add_page(
        chat_page,
        route="/chat/[chat_id]",
        title="Chats",
        on_load=[*ON_LOAD_COMMON, ChatTabState.open_chat],
    )
