"""The Settings page: Archive (the automatic archive policy), Import (an export file from here
or elsewhere) and Export (downloads)."""

from __future__ import annotations

import reflex as rx

from chatsapp.chat_route import chat_path
from chatsapp.components.accessible_upload import accessible_upload
from chatsapp.components.auth_pages import backend_url
from chatsapp.routes.exports import ALL_PATH, CHAT_PATH
from chatsapp.states.archive import ArchivePolicyTabState
from chatsapp.states.settings import RefusedRow, SettingsTabState

IMPORT_UPLOAD_ID = "import-upload"
ACCEPTED = {"application/json": [".json"], "application/zip": [".zip"]}


def download_link(label: str, href: rx.Var[str], **props: object) -> rx.Component:
    """A link the browser downloads (the route answers ``Content-Disposition: attachment``).

    Reflex renders a link as React Router's, which would route a same-origin path inside the
    page (to "not found") instead of fetching it: ``reloadDocument`` leaves it to the browser.
    """
    return rx.el.a(label, href=href, download="", custom_attrs={"reloadDocument": True}, **props)


def chat_export_url(chat_id: rx.Var[str], kind: str) -> rx.Var[str]:
    """The backend address of one chat's export (``kind``: ``json`` or ``md``)."""
    head, tail = CHAT_PATH.split("{chat_id}")
    return backend_url(head + chat_id + tail.format(kind=kind))


def _refused(row: RefusedRow) -> rx.Component:
    return rx.el.li(rx.text.strong(row.item), ": ", row.reason, class_name="import-refused")


def _progress() -> rx.Component:
    state = SettingsTabState
    return rx.cond(
        state.phase == "uploading",
        rx.hstack(
            rx.spinner(size="1"),
            rx.text("Uploading… ", state.received_label, " received", size="2"),
            id="import-progress",
            align="center",
        ),
        rx.vstack(
            rx.text("Importing… ", state.progress_percent, "%", size="2"),
            rx.progress(value=state.progress_percent, max=100, width="100%"),
            id="import-progress",
            width="100%",
        ),
    )


def _report() -> rx.Component:
    state = SettingsTabState
    return rx.vstack(
        rx.callout(state.summary, icon="circle-check", color_scheme="green", id="import-summary"),
        rx.cond(
            state.first_chat_id != "",
            rx.link(
                "Open the first imported chat",
                href=chat_path(state.first_chat_id),
                id="open-imported",
            ),
        ),
        rx.cond(
            state.refused_count > 0,
            rx.box(
                rx.text(state.refused_count, " refused:", weight="bold", size="2"),
                rx.el.ul(rx.foreach(state.refused, _refused), style={"padding_left": "1.2rem"}),
                id="import-refused",
                width="100%",
                class_name="wrap-anywhere",  # a refused file's long path wraps on a phone
            ),
        ),
        width="100%",
    )


def _import_section() -> rx.Component:
    state = SettingsTabState
    return rx.vstack(
        rx.heading("Import", size="4"),
        rx.text(
            "An export of Chats (.json or .zip), ChatGPT (conversations.json or its .zip), "
            "Claude or Open WebUI. Importing the same file again adds only what is new. "
            "Largest file: ",
            state.max_import_label,
            ".",
            size="2",
            color_scheme="gray",
        ),
        accessible_upload(
            rx.button(
                rx.icon("upload", size=14),
                "Choose a file to import",
                variant="soft",
                disabled=state.busy,
            ),
            id=IMPORT_UPLOAD_ID,
            accept=ACCEPTED,
            multiple=False,
            max_files=1,
            disabled=state.busy,
            on_drop=SettingsTabState.upload_import(
                rx.upload_files_chunk(upload_id=IMPORT_UPLOAD_ID)
            ),
            border="1px dashed var(--gray-a7)",
            padding="1rem",
            width="100%",
        ),
        rx.cond(state.busy, _progress()),
        rx.cond(
            state.error != "",
            rx.callout(state.error, icon="triangle-alert", color_scheme="red", id="import-error"),
        ),
        rx.cond(state.phase == "done", _report()),
        spacing="3",
        width="100%",
        id="import-section",
    )


def _export_section() -> rx.Component:
    return rx.vstack(
        rx.heading("Export", size="4"),
        rx.text(
            "Every chat with every branch and attachment, in the format Import reads back. "
            "One chat as JSON or Markdown: its menu at the top of the chat.",
            size="2",
            color_scheme="gray",
        ),
        rx.button(
            download_link("Export everything (.zip)", backend_url(ALL_PATH), id="export-all"),
            as_child=True,
            variant="soft",
        ),
        spacing="3",
        width="100%",
        id="export-section",
    )


def _archive_section() -> rx.Component:
    state = ArchivePolicyTabState
    return rx.vstack(
        rx.heading("Archive", size="4"),
        rx.text(
            "Archive chats untouched for this many days (",
            state.limits,
            "; blank: never). Archived chats leave the list for the Archived section of the "
            "sidebar, and every search still finds them.",
            size="2",
            color_scheme="gray",
        ),
        rx.form(
            rx.hstack(
                rx.input(
                    value=state.days,
                    on_change=state.set_days,
                    placeholder="Off",
                    type="number",
                    min=1,
                    width="8rem",
                    id="auto-archive-days",
                ),
                rx.text("days", size="2"),
                rx.button("Save", type="submit", variant="soft", id="auto-archive-save"),
                align="center",
                spacing="2",
            ),
            on_submit=lambda _form: ArchivePolicyTabState.save(),
        ),
        rx.cond(
            state.error != "",
            rx.text(state.error, size="2", color_scheme="red", id="auto-archive-error"),
        ),
        spacing="3",
        width="100%",
        id="archive-section",
    )


def settings_view() -> rx.Component:
    return rx.box(
        rx.vstack(
            rx.heading("Settings", size="6"),
            _archive_section(),
            rx.separator(size="4"),
            _import_section(),
            rx.separator(size="4"),
            _export_section(),
            spacing="5",
            max_width="40rem",
            margin="0 auto",
            padding="3rem 1.5rem",
            width="100%",
        ),
        id="settings-page",
        height="100%",
        overflow_y="auto",
    )
