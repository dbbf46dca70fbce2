"""Shared memory: every block of the user, editable, live in every tab."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.edit_form import edit_form
from chatsapp.components.markdown import safe_markdown
from chatsapp.states.memory import APPEND_FIELD_ID, MemoryEditorTabState, SharedMemoryState
from chatsapp.states.rows import MemoryRow


def _block(block: MemoryRow) -> rx.Component:
    editing = MemoryEditorTabState.editing & (MemoryEditorTabState.label == block.label)
    return rx.vstack(
        rx.hstack(
            rx.text(block.label, weight="bold", size="2"),
            rx.spacer(),
            rx.icon_button(
                rx.icon("pencil", size=12),
                size="1",
                variant="ghost",
                on_click=MemoryEditorTabState.start_edit(block.label, block.content),
                class_name="memory-edit",
                aria_label="Edit memory",
            ),
            width="100%",
        ),
        rx.cond(
            editing,
            edit_form(
                rx.text_area(
                    name="draft",
                    default_value=MemoryEditorTabState.draft,
                    rows="8",
                    width="100%",
                    class_name="memory-draft",
                    aria_label="Memory text",
                ),
                save_label="Save",
                save_class="memory-save",
                on_cancel=MemoryEditorTabState.cancel,
                on_submit=MemoryEditorTabState.save_form,
            ),
            rx.box(
                rx.cond(
                    block.content == "",
                    rx.text("Nothing remembered yet.", size="1", color_scheme="gray"),
                    safe_markdown(block.content),
                ),
                class_name="memory-content",
                custom_attrs={"data-label": block.label},
                width="100%",
            ),
        ),
        width="100%",
        padding="0.75rem",
        border="1px solid var(--gray-a5)",
        border_radius="var(--radius-3)",
    )


def _append_form() -> rx.Component:
    """Adds one fact to the memory every chat reads (an atomic append, never a rewrite)."""
    return rx.form(
        rx.hstack(
            rx.input(
                placeholder="Add a fact to remember…",
                name="text",
                size="2",
                flex="1",
                id=APPEND_FIELD_ID,
                aria_label="Add a fact to remember",
            ),
            rx.button("Add", size="2", type="submit"),
            width="100%",
        ),
        on_submit=MemoryEditorTabState.append_form,
        width="100%",
    )


def memory_toggle() -> rx.Component:
    return rx.tooltip(
        rx.icon_button(
            rx.icon("brain", size=16),
            variant="soft",
            on_click=MemoryEditorTabState.toggle,
            id="toggle-memory",
            aria_label="Shared memory",
        ),
        content="Shared memory",
    )


def memory_panel() -> rx.Component:
    return rx.fragment(
        rx.cond(
            MemoryEditorTabState.open,
            rx.box(
                rx.vstack(
                    rx.hstack(
                        rx.heading("Shared memory", size="4"),
                        rx.spacer(),
                        rx.icon_button(
                            rx.icon("x", size=16),
                            variant="ghost",
                            on_click=MemoryEditorTabState.toggle,
                            aria_label="Close shared memory",
                            # Shown under 1024 px, where the panel covers the header's toggle.
                            class_name="sheet-close",
                            id="close-memory",
                        ),
                        width="100%",
                        align="center",
                    ),
                    rx.text(
                        "Every chat reads these notes. Changes appear in all your tabs.",
                        size="1",
                        color_scheme="gray",
                    ),
                    _append_form(),
                    rx.foreach(SharedMemoryState.blocks, _block),
                    spacing="3",
                    padding="1rem",
                ),
                id="memory-panel",
                # A side panel on wider screens, a bottom sheet on phones: assets/layout.css.
                role="complementary",
                aria_label="Shared memory",
                overflow_y="auto",
                border_left="1px solid var(--gray-a5)",
                background="var(--gray-a2)",
            ),
        ),
    )
