"""The banner that marks a temporary chat: what it will not keep, and when it ends."""

from __future__ import annotations

import reflex as rx

from chatsapp.states.shared_conversation import SharedConversationState


def temporary_banner() -> rx.Component:
    """Shown above a temporary chat's transcript only (``expires_iso`` is "" for any other)."""
    return rx.cond(
        SharedConversationState.expires_iso != "",
        rx.callout(
            rx.text(
                "Temporary chat: not listed, not searched, never remembered or titled by a "
                "model. It disappears when you close it, and ",
                rx.moment(SharedConversationState.expires_iso, from_now=True),
                " at the latest.",
                size="2",
            ),
            icon="timer",
            color_scheme="amber",
            variant="surface",
            size="1",
            width="100%",
            id="temporary-banner",
            role="status",
        ),
    )
