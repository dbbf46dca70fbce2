"""The fixed app shell: a sidebar of chats beside the main pane."""

import reflex as rx

SIDEBAR_WIDTH = "18rem"


def sidebar() -> rx.Component:
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.heading("Chats", size="5"),
                rx.spacer(),
                rx.color_mode.button(size="1", variant="ghost"),
                width="100%",
                align="center",
            ),
            rx.button(
                rx.icon("square-pen", size=16),
                "New chat",
                width="100%",
                variant="soft",
                id="new-chat",
            ),
            rx.text("No chats yet", size="2", color_scheme="gray", id="chat-list-empty"),
            spacing="3",
            padding="1rem",
        ),
        id="sidebar",
        width=SIDEBAR_WIDTH,
        min_width=SIDEBAR_WIDTH,
        height="100vh",
        border_right="1px solid var(--gray-a5)",
        background="var(--gray-a2)",
    )


def shell(main: rx.Component) -> rx.Component:
    return rx.hstack(
        sidebar(),
        rx.box(main, id="main-pane", flex="1", height="100vh", overflow="auto"),
        spacing="0",
        width="100%",
    )
