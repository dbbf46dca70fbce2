"""The composer's context meter: how much of the window the next turn sends, and where (and
whether) compaction sets in. Values come from ``SharedChatSettingsState`` (every tab of the
chat sees the same meter; the bridge refreshes it after each run)."""

from __future__ import annotations

import reflex as rx

from chatsapp.states.models import SharedChatSettingsState as Settings

_BAR_HEIGHT = "6px"


def _bar() -> rx.Component:
    """A thin bar filled to the next turn's share, with a tick where compaction sets in."""
    return rx.box(
        rx.box(
            width=Settings.meter_percent.to_string() + "%",
            height="100%",
            background=rx.cond(Settings.will_compact, "var(--amber-9)", "var(--accent-9)"),
            border_radius="inherit",
            id="context-meter-fill",
        ),
        rx.cond(
            Settings.compact_marker_percent >= 0,
            rx.box(
                position="absolute",
                top="-3px",
                left=Settings.compact_marker_percent.to_string() + "%",
                width="2px",
                height="12px",
                background="var(--amber-10)",
                title="Compaction sets in here",
                id="compaction-threshold",
            ),
        ),
        position="relative",
        width="8rem",
        height=_BAR_HEIGHT,
        background="var(--gray-a4)",
        border_radius="var(--radius-1)",
        flex_shrink="0",
    )


def context_meter() -> rx.Component:
    return rx.cond(
        Settings.loaded,
        rx.hstack(
            _bar(),
            rx.text(Settings.meter_label, size="1", color_scheme="gray", id="context-meter-label"),
            rx.cond(
                Settings.will_compact,
                rx.badge(
                    "Compacts before the next reply",
                    color_scheme="amber",
                    size="1",
                    id="compaction-due",
                ),
            ),
            align="center",
            spacing="2",
            id="context-meter",
            custom_attrs={"data-percent": Settings.meter_percent.to_string()},
            title="How much of the model's context window the next turn sends (an estimate)",
        ),
    )
