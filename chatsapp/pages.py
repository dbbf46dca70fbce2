"""Pages: ``/`` opens the most recent chat (or the empty state); one URL per chat."""

from __future__ import annotations

import reflex as rx

from chatsapp.chat_route import CHAT_ROUTE
from chatsapp.components import connection_notice
from chatsapp.components.admin import admin_page_body
from chatsapp.components.agents_page import agents_page_body
from chatsapp.components.auth_pages import (
    account_page_body,
    setup_page,
    sign_in_page,
    sign_up_page,
    signed_out_notice,
)
from chatsapp.components.chat_view import chat_view
from chatsapp.components.endpoints_admin import endpoints_admin_body
from chatsapp.components.memory_panel import memory_panel, memory_toggle
from chatsapp.components.settings import settings_view
from chatsapp.components.sidebar import drawer_button, sidebar
from chatsapp.states.account import AccountTabState, AdminTabState, AuthPageTabState
from chatsapp.states.agents import AgentsTabState
from chatsapp.states.archive import ArchivePolicyTabState, SharedArchiveState
from chatsapp.states.chat_people import ChatPeopleTabState
from chatsapp.states.chat_views import ChatViewsTabState
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.endpoints_admin import EndpointsAdminTabState
from chatsapp.states.home import HomeTabState
from chatsapp.states.memory import SharedMemoryState
from chatsapp.states.models import ChatSettingsTabState
from chatsapp.states.projects import SharedProjectsState
from chatsapp.states.settings import SettingsTabState
from chatsapp.states.shared_with_me import SharedWithMeState
from chatsapp.states.status import WorkerTabState


def shell(main: rx.Component, *, drawer_button_in_main: bool = False) -> rx.Component:
    """The signed-in layout; a tab whose session ended elsewhere shows only a notice.

    ``drawer_button_in_main``: the page's own header holds the phone's drawer button (the chat
    view does); other pages get one floating where the sidebar toggle sits on wider screens.
    """
    return rx.cond(
        AccountTabState.signed_out, signed_out_notice(), _layout(main, drawer_button_in_main)
    )


def _layout(main: rx.Component, drawer_button_in_main: bool) -> rx.Component:
    """Sidebar, main pane, memory panel; how they fit each width is ``assets/layout.css``."""
    return rx.hstack(
        rx.script(src="/keys.js"),
        rx.script(src="/drawer.js"),
        rx.script(src="/upload_credentials.js"),
        rx.el.span(WorkerTabState.worker, id="worker-id", display="none"),
        sidebar(),
        rx.box(id="drawer-backdrop", aria_hidden="true"),
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
            rx.fragment() if drawer_button_in_main else drawer_button("floating-drawer-button"),
            main,
            id="main-pane",
            role="main",
        ),
        memory_panel(),
        spacing="0",
        class_name="app-shell",
    )


def _empty_state() -> rx.Component:
    return rx.center(
        rx.box(memory_toggle(), position="absolute", top="0.75rem", right="1.25rem"),
        rx.vstack(
            rx.heading("Start a conversation", size="6"),
            rx.text("Create a chat from the sidebar, or press Ctrl+Shift+O.", color_scheme="gray"),
            rx.button("New chat", on_click=SidebarTabState.create_chat, id="empty-new-chat"),
            align="center",
            text_align="center",
            padding="1.5rem",
        ),
        height="100%",
        id="empty-state",
    )


def _missing_chat() -> rx.Component:
    return rx.center(
        drawer_button("floating-drawer-button"),
        rx.vstack(
            rx.heading("This chat does not exist", size="5"),
            rx.link("Back to your chats", href="/"),
            align="center",
        ),
        height="100%",
        id="missing-chat",
    )


def standalone(body: rx.Component) -> rx.Component:
    """A page without the chat layout (account, admin, agents): its body is the ``main``
    landmark; a tab whose session ended elsewhere shows only a notice."""
    return rx.cond(AccountTabState.signed_out, signed_out_notice(), rx.el.main(body))


ON_LOAD_COMMON = [
    AccountTabState.load,
    SharedDirectoryState.link,
    SharedArchiveState.link,
    SharedMemoryState.link,
    SharedWithMeState.link,
    SharedProjectsState.link,
    WorkerTabState.load,
]


def index_page() -> rx.Component:
    return shell(rx.cond(HomeTabState.no_chats, _empty_state(), rx.fragment()))


def chat_page() -> rx.Component:
    return shell(
        rx.cond(ChatTabState.missing, _missing_chat(), chat_view()), drawer_button_in_main=True
    )


def settings_page() -> rx.Component:
    return shell(settings_view())


def register(app: rx.App) -> None:
    connection_notice.show_on_every_page(app)
    app.add_page(
        index_page, route="/", title="Chats", on_load=[*ON_LOAD_COMMON, HomeTabState.open_latest]
    )
    app.add_page(
        chat_page,
        route=CHAT_ROUTE,
        title="Chats",
        on_load=[
            *ON_LOAD_COMMON,
            ChatViewsTabState.leave_other_chat,  # first: see chatsapp.states.chat_views
            ChatTabState.open_chat,
            ChatSettingsTabState.load,
            ChatPeopleTabState.load,
        ],
    )
    app.add_page(
        settings_page,
        route="/settings",
        title="Settings · Chats",
        on_load=[*ON_LOAD_COMMON, SettingsTabState.load, ArchivePolicyTabState.load],
    )
    app.add_page(
        sign_in_page,
        route="/sign-in",
        title="Sign in · Chats",
        on_load=AuthPageTabState.load_sign_in,
    )
    app.add_page(
        sign_up_page,
        route="/sign-up",
        title="Create account · Chats",
        on_load=AuthPageTabState.load_sign_up,
    )
    app.add_page(
        setup_page, route="/setup", title="Set up · Chats", on_load=AuthPageTabState.load_setup
    )
    app.add_page(
        lambda: standalone(account_page_body()),
        route="/account",
        title="Your account · Chats",
        on_load=AccountTabState.load,
    )
    app.add_page(
        lambda: standalone(admin_page_body()),
        route="/admin",
        title="Admin · Chats",
        on_load=[AccountTabState.load, AdminTabState.load],
    )
    app.add_page(
        lambda: standalone(endpoints_admin_body()),
        route="/admin/models",
        title="Model endpoints · Chats",
        on_load=[AccountTabState.load, EndpointsAdminTabState.load],
    )
    app.add_page(
        lambda: standalone(agents_page_body()),
        route="/agents",
        title="Agents · Chats",
        on_load=[AccountTabState.load, AgentsTabState.load],
    )
