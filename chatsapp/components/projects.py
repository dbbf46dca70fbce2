"""The sidebar's projects: collapsible groups above the loose chats, and what a project offers.

Each group lists the project's chats (the chat list leaves them out) and a menu: a new chat
inside the project, the project's panel (name, instructions, whether personal memory is used
too, its files and their upload) and Delete, which asks what becomes of its chats (deleted
with them: one undo brings all back). A chat moves in and out from its own row's menu ("Move
to project…" opens :func:`_move_picker`, here: the row's memo reads no state,
``tests/ui/test_sidebar_rows.py``), or on a desktop by dragging it onto a group
(:func:`_drop_form`); the chat header names its project (:func:`project_badge`).
"""

from __future__ import annotations

import reflex as rx

from chatsapp.components.accessible_upload import accessible_upload, refused_before_upload
from chatsapp.components.chat_row import ONE_LINE, chat_item, row_menu
from chatsapp.states.projects import (
    DOCUMENT_ACCEPT,
    DOCUMENT_KINDS,
    PROJECT_UPLOAD_ID,
    ProjectFileRow,
    ProjectRow,
    ProjectsTabState,
    SharedProjectsState,
)


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
            row_menu(
                "project-menu",
                "Project actions",
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
                    on_click=ProjectsTabState.ask_delete(row.id, row.name),
                    class_name="delete-project",
                ),
            ),
            width="100%",
            align="center",
            spacing="1",
        ),
        rx.cond(
            ProjectsTabState.editing_id == row.id,
            rx.vstack(_project_form(row), _files(row), spacing="2", width="100%"),
        ),
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


def _panel(title: rx.Component, *buttons: rx.Component, tint: str, panel_id: str) -> rx.Component:
    """A choice above the projects (delete, move): its question, its buttons, and Cancel."""
    return rx.vstack(
        title,
        rx.flex(
            *buttons,
            rx.button("Cancel", size="1", variant="ghost", on_click=ProjectsTabState.close_dialogs),
            gap="var(--space-1)",
            wrap="wrap",
        ),
        padding="0.5rem",
        background=f"var(--{tint}-a3)",
        border_radius="var(--radius-2)",
        width="100%",
        id=panel_id,
    )


def _delete_choice() -> rx.Component:
    """Deleting a project asks what becomes of its chats."""
    project_id, name = ProjectsTabState.deleting_id, ProjectsTabState.deleting_name
    return rx.cond(
        project_id != "",
        _panel(
            rx.text("Delete this project? Its chats:", size="1", weight="medium"),
            rx.button(
                "Move out",
                size="1",
                variant="soft",
                on_click=ProjectsTabState.delete_project(project_id, "move_out", name),
                id="delete-project-move-out",
            ),
            rx.button(
                "Delete them",
                size="1",
                color_scheme="red",
                on_click=ProjectsTabState.delete_project(project_id, "delete", name),
                id="delete-project-and-chats",
            ),
            tint="red",
            panel_id="delete-project-choice",
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
        _panel(
            rx.text("Move “", ProjectsTabState.moving_title, "” to:", size="1", weight="medium"),
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
            tint="accent",
            panel_id="move-chat-picker",
        ),
    )


def _undo_bar() -> rx.Component:
    """One undo for a project deleted with its chats: both come back."""
    return rx.cond(
        ProjectsTabState.undo_project_id != "",
        rx.hstack(
            rx.text(
                "Deleted “", ProjectsTabState.undo_name, "” and its chats", size="1", trim="both"
            ),
            rx.spacer(),
            rx.button(
                "Undo",
                size="1",
                variant="soft",
                on_click=ProjectsTabState.undo_delete,
                id="undo-delete-project",
            ),
            width="100%",
            padding="0.5rem",
            background="var(--gray-a3)",
            border_radius="var(--radius-2)",
            align="center",
            id="project-undo-bar",
        ),
    )


def _files(row: ProjectRow) -> rx.Component:
    """A project's files, each removable, and the control that adds more: read as the
    composer's attachments are (documents only, the same size limit and refusals)."""

    def file_row(file: ProjectFileRow) -> rx.Component:
        return rx.hstack(
            rx.icon("file-text", size=12, flex_shrink="0"),
            rx.text(file.name, size="1", style=ONE_LINE, flex="1", min_width="0"),
            rx.text(file.size, size="1", color_scheme="gray", flex_shrink="0"),
            rx.icon_button(
                rx.icon("x", size=10),
                size="1",
                variant="ghost",
                on_click=SharedProjectsState.remove_file(file.id),
                aria_label="Remove file",
                class_name="remove-project-file",
            ),
            width="100%",
            align="center",
            class_name="project-file",
        )

    return rx.vstack(
        rx.text("Files", size="1", weight="medium"),
        rx.foreach(row.files, file_row),
        accessible_upload(
            rx.button(rx.icon("upload", size=12), "Add files", size="1", variant="soft"),
            id=PROJECT_UPLOAD_ID,
            accept=DOCUMENT_ACCEPT,
            max_size=ProjectsTabState.file_limit_bytes,
            on_drop=ProjectsTabState.upload_file(rx.upload_files(upload_id=PROJECT_UPLOAD_ID)),
            on_drop_rejected=_refused_before_upload,
            border="none",
            padding="0",
            class_name="add-project-file",
        ),
        spacing="1",
        width="100%",
        class_name="project-files",
    )


def _refused_before_upload(rejections: rx.Var) -> rx.event.EventSpec:
    limit = ProjectsTabState.file_limit_bytes
    return refused_before_upload(rejections, limit, f"add {DOCUMENT_KINDS} files", "added")


def _drop_form() -> rx.Component:
    """Where a chat dropped on a project lands (``assets/projects_drag.js`` fills and sends
    it); the keyboard and the phone use the row's "Move to project…" instead."""
    return rx.form(
        rx.el.input(type="hidden", name="chat_id", id="drop-chat-id"),
        rx.el.input(type="hidden", name="project_id", id="drop-project-id"),
        on_submit=SharedProjectsState.drop_chat,
        id="drop-chat-form",
        display="none",
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
        rx.script(src="/projects_drag.js"),
        _drop_form(),
        rx.cond(ProjectsTabState.creating, _new_project_form()),
        _undo_bar(),
        _move_picker(),
        _delete_choice(),
        rx.foreach(SharedProjectsState.rows, _group),
        spacing="1",
        width="100%",
        max_height="45vh",
        overflow_y="auto",
        id="projects-section",
    )
