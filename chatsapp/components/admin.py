"""The admin page: people (create, disable, enable, reset a password), sign-up policy, invites.

Every action is re-checked on the server (the actor must be an admin at that event); the page
only hides what a non-admin could not do anyway.
"""

from __future__ import annotations

import reflex as rx

from chatsapp.states.account import AdminTabState
from chatsapp.states.rows import UserRow

POLICIES = ["closed", "invite", "open"]


def _user_row(user: UserRow) -> rx.Component:
    """One person; on a phone a stacked card (assets/layout.css), hence the cells' labels."""
    return rx.table.row(
        rx.table.cell(user.username),
        rx.table.cell(user.role, custom_attrs={"data-label": "Role"}),
        rx.table.cell(
            rx.cond(user.disabled, "disabled", "active"), custom_attrs={"data-label": "Status"}
        ),
        rx.table.cell(
            rx.cond(
                user.disabled,
                rx.button(
                    "Enable", size="1", variant="soft", on_click=AdminTabState.enable(user.id)
                ),
                rx.button(
                    "Disable",
                    size="1",
                    variant="soft",
                    color_scheme="red",
                    on_click=AdminTabState.disable(user.id),
                    id="disable-" + user.username,
                ),
            )
        ),
        id="user-" + user.username,
    )


def _create_user_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.input(name="username", placeholder="Username", required=True, id="new-username"),
            rx.input(
                name="password",
                type="password",
                placeholder="Password",
                required=True,
                auto_complete="new-password",
                id="new-password",
            ),
            rx.select(
                ["user", "admin"],
                name="role",
                default_value="user",
                custom_attrs={"aria-label": "Role"},
            ),
            rx.button("Create", type="submit", id="create-user"),
            wrap="wrap",
            class_name="form-row",
        ),
        on_submit=AdminTabState.create_user,
        reset_on_submit=True,
    )


def _reset_password_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.select.root(
                rx.select.trigger(placeholder="Person", aria_label="Person"),
                rx.select.content(
                    rx.foreach(
                        AdminTabState.users,
                        lambda user: rx.select.item(user.username, value=user.id),
                    )
                ),
                name="user_id",
            ),
            rx.input(
                name="password",
                type="password",
                placeholder="New password",
                required=True,
                auto_complete="new-password",
            ),
            rx.button("Reset password", type="submit", variant="soft"),
            wrap="wrap",
            class_name="form-row",
        ),
        on_submit=AdminTabState.reset_password,
        reset_on_submit=True,
    )


def admin_page_body() -> rx.Component:
    state = AdminTabState
    return rx.center(
        rx.cond(
            state.allowed,
            rx.vstack(
                rx.hstack(
                    rx.heading("Admin", size="6"),
                    rx.spacer(),
                    rx.link("Back to your chats", href="/"),
                    width="100%",
                ),
                rx.cond(
                    state.message != "",
                    rx.callout(state.message, role="status", id="admin-message"),
                ),
                rx.heading("People", size="4"),
                rx.table.root(
                    rx.table.header(
                        rx.table.row(
                            rx.table.column_header_cell("Username"),
                            rx.table.column_header_cell("Role"),
                            rx.table.column_header_cell("Status"),
                            rx.table.column_header_cell(
                                rx.el.span("Actions", class_name="visually-hidden")
                            ),
                        )
                    ),
                    rx.table.body(rx.foreach(state.users, _user_row)),
                    width="100%",
                    class_name="stacked-table",
                ),
                _create_user_form(),
                _reset_password_form(),
                rx.heading("Sign-up", size="4"),
                rx.hstack(
                    rx.el.label("Who may create an account:", html_for="signup-policy"),
                    rx.select(
                        POLICIES,
                        value=state.signup_policy,
                        on_change=AdminTabState.set_policy,
                        id="signup-policy",
                    ),
                    align="center",
                ),
                rx.hstack(
                    rx.button(
                        "New invite link",
                        on_click=AdminTabState.new_invite,
                        variant="soft",
                        id="new-invite",
                    ),
                    rx.cond(
                        state.invite_link != "",
                        rx.code(state.invite_link, id="invite-link", class_name="wrap-anywhere"),
                    ),
                    align="center",
                    wrap="wrap",
                ),
                spacing="4",
                width="min(48rem, 94vw)",
            ),
            rx.vstack(
                rx.heading("Admins only", size="5"),
                rx.link("Back to your chats", href="/"),
                id="admin-refused",
            ),
        ),
        padding="2rem 1rem",
    )
