"""``/admin/models``: the model endpoints of the server (admins only)."""

from __future__ import annotations

import reflex as rx

from chatsapp.states.endpoints_admin import EndpointRow, EndpointsAdminTabState


def _endpoint(row: EndpointRow) -> rx.Component:
    """One endpoint; on a phone a stacked card (assets/layout.css), hence the cells' labels."""
    return rx.table.row(
        rx.table.cell(rx.text(row.name, weight="bold")),
        rx.table.cell(row.base_url, class_name="wide-cell wrap-anywhere"),
        rx.table.cell(
            rx.cond(
                row.available,
                rx.badge("answers", color_scheme="green"),
                rx.tooltip(rx.badge("unavailable", color_scheme="red"), content=row.error),
            )
        ),
        rx.table.cell(
            rx.cond(row.models != "", row.models, "any it lists: " + row.offered),
            class_name="wide-cell",
            custom_attrs={"data-label": "Models"},
        ),
        rx.table.cell(rx.cond(row.has_key, "set", "none"), custom_attrs={"data-label": "Key"}),
        rx.table.cell(
            rx.cond(
                row.from_env,
                rx.text("environment", size="1", color_scheme="gray"),
                rx.button(
                    "Remove",
                    size="1",
                    variant="soft",
                    color_scheme="red",
                    on_click=EndpointsAdminTabState.delete(row.name),
                    class_name="endpoint-delete",
                ),
            )
        ),
        class_name="endpoint-row",
        custom_attrs={"data-endpoint": row.name},
    )


def _form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.heading("Add or change an endpoint", size="3"),
            rx.hstack(
                rx.input(name="name", placeholder="name (e.g. lab)", required=True, id="ep-name"),
                rx.input(
                    name="base_url",
                    placeholder="https://host/v1",
                    required=True,
                    id="ep-url",
                    flex="1",
                ),
                width="100%",
                class_name="form-row",
            ),
            rx.hstack(
                rx.input(
                    name="api_key",
                    type="password",
                    placeholder="API key (empty: keep the stored one)",
                    auto_complete="off",
                    id="ep-key",
                    flex="1",
                ),
                rx.input(
                    name="models",
                    placeholder="allowed models, comma separated (empty: all it lists)",
                    id="ep-models",
                    flex="1",
                ),
                width="100%",
                class_name="form-row",
            ),
            rx.button("Save endpoint", type="submit", id="ep-save"),
            width="100%",
        ),
        on_submit=EndpointsAdminTabState.save,
        reset_on_submit=True,
        width="100%",
    )


def endpoints_admin_body() -> rx.Component:
    return rx.container(
        rx.vstack(
            rx.hstack(
                rx.heading("Model endpoints", size="6"),
                rx.spacer(),
                rx.link("Admin", href="/admin"),
                rx.link("Back to your chats", href="/"),
                width="100%",
                align="center",
                spacing="4",
                wrap="wrap",
            ),
            rx.cond(
                EndpointsAdminTabState.allowed,
                rx.vstack(
                    rx.cond(
                        EndpointsAdminTabState.message != "",
                        rx.callout(
                            EndpointsAdminTabState.message,
                            color_scheme=rx.cond(EndpointsAdminTabState.failed, "red", "green"),
                            id="ep-message",
                        ),
                    ),
                    rx.table.root(
                        rx.table.header(
                            rx.table.row(
                                *(
                                    rx.table.column_header_cell(h)
                                    for h in ("Name", "URL", "Status", "Models", "Key")
                                ),
                                rx.table.column_header_cell(
                                    rx.el.span("Actions", class_name="visually-hidden")
                                ),
                            )
                        ),
                        rx.table.body(rx.foreach(EndpointsAdminTabState.endpoints, _endpoint)),
                        width="100%",
                        class_name="stacked-table",
                    ),
                    rx.button(
                        "Check again", variant="soft", on_click=EndpointsAdminTabState.refresh
                    ),
                    _form(),
                    width="100%",
                    spacing="4",
                ),
                rx.text("Only an admin can configure model endpoints.", id="ep-not-allowed"),
            ),
            width="100%",
            spacing="4",
            padding_y="2rem",
        ),
        size="4",
    )
