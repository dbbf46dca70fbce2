"""Pages: the empty state at ``/`` and one URL per chat."""

import reflex as rx

from chatsapp.components.shell import shell


def _empty_state() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.heading("Start a conversation", size="6"),
            rx.text("Create a chat from the sidebar.", color_scheme="gray"),
            align="center",
        ),
        height="100%",
        id="empty-state",
    )


def index_page() -> rx.Component:
    return shell(_empty_state())


def chat_page() -> rx.Component:
    return shell(_empty_state())
