"""The chat header's agent and model controls: picker, bound agent, update banner, archive."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.session_state_panel import session_state_panel
from chatsapp.states.models import (
    AUTO_KEY,
    ChatSettingsTabState,
    ModelChoiceRow,
    SharedChatSettingsState,
)


def model_option(choice: ModelChoiceRow) -> rx.Component:
    """One model of a picker; an endpoint that does not answer is listed, greyed."""
    return rx.el.option(
        rx.cond(choice.available, choice.label, choice.label + " (unavailable)"),
        value=choice.key,
        disabled=~choice.available,
    )


def model_picker() -> rx.Component:
    """Which model writes this chat's next reply; a switch applies from the next turn."""
    return rx.tooltip(
        rx.el.select(
            rx.el.option("Agent's model or the default", value=AUTO_KEY),
            rx.foreach(ChatSettingsTabState.choices, model_option),
            value=SharedChatSettingsState.chosen_key,
            on_change=ChatSettingsTabState.choose_model,
            id="model-picker",
            aria_label="Model",
            custom_attrs={"data-next-model": SharedChatSettingsState.next_model_label},
            style={
                "max_width": "16rem",
                "font_size": "var(--font-size-1)",
                "padding": "0.2rem 0.4rem",
                "border": "1px solid var(--gray-a7)",
                "border_radius": "var(--radius-2)",
                "background": "var(--color-surface)",
            },
        ),
        content="Next reply: " + SharedChatSettingsState.next_model_label,
    )


def _agent_badge() -> rx.Component:
    return rx.hstack(
        rx.link(
            rx.badge(
                rx.icon("bot", size=12),
                SharedChatSettingsState.agent_label,
                " v",
                SharedChatSettingsState.agent_version.to_string(),
                variant="soft",
                id="agent-label",
            ),
            href="/agents",
        ),
        rx.cond(
            SharedChatSettingsState.update_available,
            rx.button(
                "Agent updated to v",
                SharedChatSettingsState.latest_version.to_string(),
                " — use it",
                size="1",
                variant="soft",
                color_scheme="amber",
                on_click=ChatSettingsTabState.use_latest_agent,
                id="agent-update",
            ),
        ),
        spacing="1",
        align="center",
    )


def _archive_button() -> rx.Component:
    return rx.tooltip(
        rx.icon_button(
            rx.cond(
                SharedChatSettingsState.archived,
                rx.icon("archive-restore", size=16),
                rx.icon("archive", size=16),
            ),
            variant="ghost",
            on_click=ChatSettingsTabState.toggle_archived,
            id="archive-toggle",
            aria_label=rx.cond(SharedChatSettingsState.archived, "Unarchive chat", "Archive chat"),
        ),
        content=rx.cond(SharedChatSettingsState.archived, "Unarchive chat", "Archive chat"),
    )


def chat_header_controls() -> rx.Component:
    """Everything issue 12 adds to the chat header, in one place (one line in chat_view)."""
    return rx.hstack(
        rx.cond(
            SharedChatSettingsState.archived,
            rx.badge("Archived", color_scheme="gray", id="archived-label"),
        ),
        _agent_badge(),
        model_picker(),
        session_state_panel(),
        _archive_button(),
        spacing="2",
        align="center",
    )
