"""The session-state drawer of a chat: its JSON, version, last change and size ceiling."""

from __future__ import annotations

import reflex as rx

from chatsapp.states.session_state import SessionStateTabState


def _facts() -> rx.Component:
    return rx.text(
        "Version ",
        rx.el.span(SessionStateTabState.version.to_string(), id="state-version"),
        " · ",
        SessionStateTabState.size_bytes.to_string(),
        " of ",
        SessionStateTabState.limit_bytes.to_string(),
        " bytes",
        rx.cond(
            SessionStateTabState.updated_iso != "",
            " · changed " + SessionStateTabState.updated_iso,
            "",
        ),
        size="1",
        color_scheme="gray",
    )


def _stale_value() -> rx.Component:
    return rx.cond(
        SessionStateTabState.current_value != "",
        rx.vstack(
            rx.text("Current value", size="2", weight="bold"),
            rx.code_block(
                SessionStateTabState.current_value, language="json", id="state-current-value"
            ),
            width="100%",
        ),
    )


def session_state_panel() -> rx.Component:
    """A header button opening a drawer: read, edit, and save at the version shown."""
    return rx.drawer.root(
        rx.drawer.trigger(
            rx.icon_button(
                rx.icon("braces", size=16),
                variant="ghost",
                id="state-toggle",
                aria_label="Session state",
            )
        ),
        rx.drawer.overlay(z_index="5"),
        rx.drawer.portal(
            rx.drawer.content(
                rx.vstack(
                    rx.hstack(
                        rx.heading("Session state", size="4"),
                        rx.spacer(),
                        rx.drawer.close(
                            rx.icon_button(
                                rx.icon("x", size=16),
                                variant="ghost",
                                id="state-close",
                                aria_label="Close",
                            )
                        ),
                        width="100%",
                    ),
                    _facts(),
                    # Not bound to the state (``default_value``): the JSON travels with Save.
                    rx.form(
                        rx.vstack(
                            rx.text_area(
                                name="draft",
                                default_value=SessionStateTabState.draft,
                                key=SessionStateTabState.draft_generation,
                                rows="16",
                                width="100%",
                                font_family="var(--code-font-family)",
                                id="state-draft",
                                aria_label="Session state (JSON)",
                            ),
                            rx.cond(
                                SessionStateTabState.error != "",
                                rx.callout(
                                    SessionStateTabState.error,
                                    color_scheme="red",
                                    size="1",
                                    id="state-error",
                                ),
                            ),
                            _stale_value(),
                            rx.hstack(
                                rx.button(
                                    "Reload",
                                    type="button",
                                    variant="soft",
                                    on_click=SessionStateTabState.reload,
                                    id="state-reload",
                                ),
                                rx.button("Save", type="submit", id="state-save"),
                                justify="end",
                                width="100%",
                            ),
                            width="100%",
                        ),
                        on_submit=SessionStateTabState.save_form,
                        width="100%",
                    ),
                    padding="1.25rem",
                    width="100%",
                    height="100%",
                    overflow_y="auto",
                ),
                top="auto",
                # The content's base style pins left and right to 0; with a width it sat at the
                # left edge, and vaul's right-drawer ::after (background: inherit, left: 100%,
                # width: 200%) then painted the rest of the page white.
                left="auto",
                right="0",
                height="100%",
                width="min(32rem, 100vw)",
                background="var(--color-panel-solid)",
                z_index="6",
                id="state-panel",
                aria_label="Session state",  # a dialog: named, as its heading reads
            )
        ),
        direction="right",
        open=SessionStateTabState.open,
        on_open_change=SessionStateTabState.set_open,
    )
