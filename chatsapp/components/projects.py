"""The sidebar's projects: collapsible groups above the loose chats, and what a project offers.

Each group lists the project's chats (the chat list leaves them out) and a menu: a new chat
inside the project, the project's form (name, instructions, whether personal memory is used
too) and Delete, which asks what becomes of its chats. A chat moves in and out from its own
row's menu ("Move to project…" opens :func:`_move_picker`, here: the row's memo reads no
state, ``tests/ui/test_sidebar_rows.py``); the chat header names its project
(:func:`project_badge`).
"""

from __future__ import annotations

import reflex as rx

from chatsapp.components.chat_row import ONE_LINE, chat_item
from chatsapp.states.projects import ProjectRow, ProjectsTabState, SharedProjectsState


def _project_form(row: ProjectRow) -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.el.input(type="hidden", name="project_id", value=row.id),
            rx.input(
                name="name",
                default_value=row.name,
                size="1",
                width="100%",
                aria_label="Project name",
                class_name="project-name-field",
            ),
            rx.text_area(
                name="instructions",
                default_value=row.instructions,
                placeholder="Instructions for every chat in this project",
                size="1",
                width="100%",
                class_name="project-instructions-field",
            ),
            rx.el.label(
                rx.el.input(
                    type="checkbox",
                    name="use_personal_memory",
                    default_checked=row.use_personal_memory,
                ),
                " Also use my personal memory",
                font_size="0.75rem",
            ),
            rx.hstack(
                rx.button("Save", type="submit", size="1", class_name="save-project"),
                rx.button(
                    "Cancel",
                    type="button",
                    size="1",
                    variant="soft",
                    on_click=ProjectsTabState.close_dialogs,
                ),
            ),
            spacing="1",
            width="100%",
        ),
        # The form's submit handler is hoisted out of the groups' loop, where ``row`` is not
        # defined: the project's id travels as a field of the form.
        on_submit=lambda form: [
            SharedProjectsState.save_project(form),
            ProjectsTabState.close_dialogs(),
        ],
        width="100%",
    )


def _group(row: ProjectRow) -> rx.Component:
    folded = ProjectsTabState.folded.contains(row.id)
    return rx.vstack(
        rx.hstack(
            rx.button(
                rx.icon(rx.cond(folded, "chevron-right", "chevron-down"), size=14),
                rx.icon("folder", size=14),
                rx.text(row.name, style=ONE_LINE, class_name="project-name"),
                variant="ghost",
                size="1",
                on_click=ProjectsTabState.toggle(row.id),
                class_name="project-toggle",
                aria_expanded=~folded,
                flex="1",
                min_width="0",
                justify="start",
            ),
            rx.menu.root(
                rx.menu.trigger(
                    rx.icon_button(
                        rx.icon("ellipsis", size=14),
                        size="1",
                        variant="ghost",
                        class_name="project-menu",
                        aria_label="Project actions",
                    )
                ),
                rx.menu.content(
                    rx.menu.item(
                        "New chat here",
                        on_click=SharedProjectsState.new_chat_in(row.id),
                        class_name="new-chat-in-project",
                        custom_attrs={"data-drawer-close": ""},
                    ),
                    rx.menu.item(
                        "Edit project…",
                        on_click=ProjectsTabState.edit(row.id),
                        class_name="edit-project",
                    ),
                    rx.menu.item(
                        "Delete project…",
                        color="red",
                        on_click=ProjectsTabState.ask_delete(row.id),
                        class_name="delete-project",
                    ),
                ),
            ),
            width="100%",
            align="center",
            spacing="1",
        ),
        rx.cond(ProjectsTabState.editing_id == row.id, _project_form(row)),
        rx.cond(
            ~folded,
            rx.vstack(
                rx.foreach(row.chats, chat_item),
                rx.cond(
                    row.chats.length() == 0,
                    rx.text("No chats yet", size="1", color_scheme="gray", padding_left="1.5rem"),
                ),
                spacing="1",
                width="100%",
                padding_left="0.75rem",
                class_name="project-chats",
            ),
        ),
        spacing="1",
        width="100%",
        class_name="project-group",
        custom_attrs={"data-project-id": row.id},
    )


def _new_project_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.input(
                name="name",
                placeholder="Project name",
                size="1",
                flex="1",
                auto_focus=True,
                id="new-project-name",
                aria_label="New project name",
            ),
            rx.button("Create", type="submit", size="1", id="create-project"),
            width="100%",
        ),
        on_submit=lambda form: [
            SharedProjectsState.create_project(form),
            ProjectsTabState.close_dialogs(),
        ],
        reset_on_submit=True,
        width="100%",
    )


def _delete_choice() -> rx.Component:
    """Deleting a project asks what becomes of its chats."""
    project_id = ProjectsTabState.deleting_id
    return rx.cond(
        project_id != "",
        rx.vstack(
            rx.text("Delete this project? Its chats:", size="1", weight="medium"),
            rx.hstack(
                rx.button(
                    "Move out",
                    size="1",
                    variant="soft",
                    on_click=[
                        SharedProjectsState.delete_project(project_id, "move_out"),
                        ProjectsTabState.close_dialogs(),
                    ],
                    id="delete-project-move-out",
                ),
                rx.button(
                    "Delete them",
                    size="1",
                    color_scheme="red",
                    on_click=[
                        SharedProjectsState.delete_project(project_id, "delete"),
                        ProjectsTabState.close_dialogs(),
                    ],
                    id="delete-project-and-chats",
                ),
                rx.button(
                    "Cancel", size="1", variant="ghost", on_click=ProjectsTabState.close_dialogs
                ),
                spacing="1",
                wrap="wrap",
            ),
            padding="0.5rem",
            background="var(--red-a3)",
            border_radius="var(--radius-2)",
            width="100%",
            id="delete-project-choice",
        ),
    )


def _move_picker() -> rx.Component:
    """Where a chat moves: every project, or out of any (one tap each, on a phone too)."""
    chat_id = ProjectsTabState.moving_id

    def choice(row: ProjectRow) -> rx.Component:
        return rx.button(
            row.name,
            size="1",
            variant="soft",
            on_click=[
                SharedProjectsState.move_chat(chat_id, row.id),
                ProjectsTabState.close_dialogs(),
            ],
            class_name="move-to-project",
            custom_attrs={"data-project-id": row.id},
        )

    return rx.cond(
        chat_id != "",
        rx.vstack(
            rx.text("Move “", ProjectsTabState.moving_title, "” to:", size="1", weight="medium"),
            rx.flex(
                rx.foreach(SharedProjectsState.rows, choice),
                rx.button(
                    "No project",
                    size="1",
                    variant="outline",
                    on_click=[
                        SharedProjectsState.move_chat(chat_id, ""),
                        ProjectsTabState.close_dialogs(),
                    ],
                    class_name="move-out-of-project",
                ),
                rx.button(
                    "Cancel", size="1", variant="ghost", on_click=ProjectsTabState.close_dialogs
                ),
                gap="var(--space-1)",
                wrap="wrap",
            ),
            padding="0.5rem",
            background="var(--accent-a3)",
            border_radius="var(--radius-2)",
            width="100%",
            id="move-chat-picker",
        ),
    )


def project_badge(chat_id: rx.Var[str]) -> rx.Component:
    """The chat header's project name, when the chat is in one."""
    return rx.cond(
        SharedProjectsState.project_of_chat.contains(chat_id),
        rx.badge(
            rx.icon("folder", size=12),
            SharedProjectsState.project_of_chat[chat_id],
            size="1",
            variant="soft",
            id="chat-project",
        ),
    )


def projects_section() -> rx.Component:
    """The projects, as groups above the loose chats."""
    return rx.vstack(
        rx.hstack(
            rx.text("Projects", size="1", weight="bold", color_scheme="gray"),
            rx.spacer(),
            rx.icon_button(
                rx.icon("folder-plus", size=14),
                size="1",
                variant="ghost",
                on_click=ProjectsTabState.set_creating(~ProjectsTabState.creating),
                id="new-project",
                aria_label="New project",
            ),
            width="100%",
            align="center",
        ),
        rx.cond(ProjectsTabState.creating, _new_project_form()),
        _move_picker(),
        _delete_choice(),
        rx.foreach(SharedProjectsState.rows, _group),
        spacing="1",
        width="100%",
        max_height="45vh",
        overflow_y="auto",
        id="projects-section",
    )
