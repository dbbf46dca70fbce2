"""A box of text edited in place, with Cancel and a submit button, as a form.

The box is not bound to the state (``default_value``): its text travels with the submit, so a
late echo of a bound box cannot erase what was typed after a pause
(``tests/e2e/test_slow_server_typing.py``).
"""

from __future__ import annotations

import reflex as rx
from reflex.event import EventType


def edit_form(
    box: rx.Component,
    *,
    save_label: str,
    save_class: str,
    on_cancel: EventType[()],
    on_submit: EventType[dict],
) -> rx.Component:
    """``box`` (a named, unbound field) above Cancel and ``save_label``; submit sends the form."""
    return rx.form(
        rx.vstack(
            box,
            rx.hstack(
                rx.button("Cancel", type="button", size="1", variant="soft", on_click=on_cancel),
                rx.button(save_label, type="submit", size="1", class_name=save_class),
                justify="end",
                width="100%",
            ),
            width="100%",
        ),
        on_submit=on_submit,
        width="100%",
    )
