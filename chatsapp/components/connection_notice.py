"""What every page shows while its tab has lost the server: a notice that says so.

It replaces Reflex's own (a wifi icon whose opacity pulses for as long as the server is away),
which kept the tab drawing frames: a tab left waiting for a stopped server spent ~16 % of a
core (its renderer and compositor) against ~2 % while connected and idle. This one pulses
three times to catch the eye, then stays still (assets/layout.css, ``#connection-lost``).
The toast Reflex shows when reconnecting keeps failing stays as it is.
"""

from __future__ import annotations

import reflex as rx

from chatsapp.reflex_seam import (
    connection_error,
    connection_toaster,
    has_connection_errors,
    replace_connection_overlay,
)


@rx.memo
def connection_notice() -> rx.Component:
    """A component of its own (memo): its hooks read the socket's errors, which only a
    component inside the app's event loop provider can."""
    return rx.fragment(
        rx.cond(
            has_connection_errors,
            rx.el.div(
                rx.icon("wifi-off", size=16, aria_hidden="true"),
                rx.el.span("Reconnecting…"),
                id="connection-lost",
                role="status",
                title=connection_error,
            ),
        ),
        connection_toaster(),
    )


def show_on_every_page(app: rx.App) -> None:
    """Every page of ``app`` shows the notice instead of Reflex's connection overlay."""
    replace_connection_overlay(app, connection_notice)
