"""The sign-in, sign-up, first-run and account pages.

The forms post natively to :mod:`chatsapp.routes.account_forms` on the backend (the page and the API
share a port in production; in development they are apart, so the action is the backend's
address as the page computes it). No script sees a password or the session token.
"""

from __future__ import annotations

import json

import reflex as rx
from reflex_base.constants import Dirs
from reflex_base.utils.imports import ImportVar
from reflex_base.vars import VarData
from reflex_components_core.el.elements.base import BaseHTML

from chatsapp.reflex_seam import var_data_of
from chatsapp.states.account import AccountTabState, AuthPageTabState


class NativeForm(BaseHTML):
    """A plain ``<form>`` the browser submits itself.

    ``rx.el.form`` always handles submit in script (``preventDefault``, then an event); a
    password must instead go straight to the sign-in route, so no event and no state hold it.
    """

    tag = "form"
    action: rx.Var[str]
    method: rx.Var[str]


def backend_url(path: str | rx.Var[str]) -> rx.Var[str]:
    """``path`` on the backend, as the page reaches it (the same rule as its websocket).

    ``path`` may be a state var (a chat's export link); it must be a path of this app.

    A page prerendered for production (no ``window``) holds ``path`` itself: that page is
    served by the backend, so the path is on the right host. Resolving it there instead would
    bake the build's ``localhost`` into the HTML, and hydration keeps a server-rendered
    attribute: links and forms then pointed at another origin (a download that never started,
    a sign-in posted to ``localhost`` for anyone who reached the app by another name).
    """
    if isinstance(path, rx.Var):
        path_js, path_data = str(path), var_data_of(path)
    else:
        path_js, path_data = json.dumps(path), None
    return rx.Var(
        _js_expr=(
            f'(typeof window === "undefined" ? {path_js}'
            f" : new URL({path_js}, getBackendURL(env.PING)).href)"
        ),
        _var_data=VarData.merge(
            VarData(
                imports={
                    f"$/{Dirs.STATE_PATH}": "getBackendURL",
                    "$/env.json": ImportVar(tag="env", is_default=True),
                }
            ),
            path_data,
        ),
    ).to(str)


def _field(label: str, name: str, *, kind: str = "text", autocomplete: str = "") -> rx.Component:
    return rx.vstack(
        rx.el.label(label, html_for=f"field-{name}", font_size="0.9rem"),
        rx.input(
            id=f"field-{name}",
            name=name,
            type=kind,
            required=True,
            auto_complete=autocomplete or "off",
            width="100%",
        ),
        spacing="1",
        width="100%",
    )


def _messages(error: rx.Var[str], notice: rx.Var[str]) -> rx.Component:
    return rx.fragment(
        rx.cond(
            error != "",
            rx.callout(error, color_scheme="red", role="alert", id="auth-error", width="100%"),
        ),
        rx.cond(
            notice != "",
            rx.callout(notice, color_scheme="green", role="status", id="auth-notice", width="100%"),
        ),
    )


def _card(title: str, *children: rx.Component) -> rx.Component:
    """The page's one card, the page's ``main`` landmark (nothing of it outside a landmark)."""
    return rx.el.main(
        rx.center(
            rx.card(
                rx.vstack(rx.heading(title, size="6"), *children, spacing="4", width="100%"),
                width="min(24rem, 92vw)",
                size="3",
                class_name="auth-card",
            ),
            min_height="100vh",
            padding="1rem",
        )
    )


def _form(action: str, *children: rx.Component, form_id: str) -> rx.Component:
    return NativeForm.create(
        rx.vstack(*children, spacing="3", width="100%"),
        action=backend_url(action),
        method="post",
        id=form_id,
        width="100%",
    )


def sign_in_page() -> rx.Component:
    """The password form; in ``header`` mode a refusal: the proxy signs people in, not us."""
    return rx.cond(AuthPageTabState.auth_mode == "header", _proxy_refusal(), _password_sign_in())


def _proxy_refusal() -> rx.Component:
    return _card(
        "Not signed in",
        rx.text(
            "This server signs people in through its reverse proxy, and this request was not "
            "identified by it: either it did not come through a trusted proxy, or the proxy "
            "sent no identity. Open Chats through your organisation's sign-in address.",
            id="header-refused",
        ),
    )


def _password_sign_in() -> rx.Component:
    state = AuthPageTabState
    return _card(
        "Sign in to Chats",
        _messages(state.error, state.notice),
        _form(
            "/auth/sign-in",
            rx.el.input(type="hidden", name="next", value=state.next_path),
            _field("Username", "username", autocomplete="username"),
            _field("Password", "password", kind="password", autocomplete="current-password"),
            rx.button("Sign in", type="submit", width="100%", id="sign-in-submit"),
            form_id="sign-in-form",
        ),
        rx.cond(
            state.signup_policy != "closed",
            rx.link("Create an account", href="/sign-up", id="to-sign-up"),
        ),
    )


def sign_up_page() -> rx.Component:
    state = AuthPageTabState
    return _card(
        "Create your account",
        _messages(state.error, state.notice),
        rx.cond(
            (state.signup_policy == "open")
            | ((state.signup_policy == "invite") & (state.invite != "")),
            _form(
                "/auth/sign-up",
                rx.el.input(type="hidden", name="invite", value=state.invite),
                _field("Username", "username", autocomplete="username"),
                _field("Password", "password", kind="password", autocomplete="new-password"),
                rx.button("Create account", type="submit", width="100%", id="sign-up-submit"),
                form_id="sign-up-form",
            ),
            rx.text(
                rx.cond(
                    state.signup_policy == "invite",
                    "Sign-up needs an invite link from an admin.",
                    "Sign-up is closed. Ask an admin for an account.",
                ),
                id="sign-up-closed",
            ),
        ),
        rx.link("I have an account", href="/sign-in"),
    )


def setup_page() -> rx.Component:
    state = AuthPageTabState
    return _card(
        "Set up Chats",
        rx.text(
            "Create the admin account. The setup code was printed by the command that started "
            "the server (or run `chats users add --admin` on the server instead).",
            size="2",
        ),
        _messages(state.error, state.notice),
        _form(
            "/auth/setup",
            _field("Setup code", "setup_code"),
            _field("Admin username", "username", autocomplete="username"),
            _field("Password", "password", kind="password", autocomplete="new-password"),
            rx.button("Create admin account", type="submit", width="100%", id="setup-submit"),
            form_id="setup-form",
        ),
    )


def sign_out_button(**props: object) -> rx.Component:
    """A one-button form: sign-out is a POST, so no other site can sign you out by a link."""
    return NativeForm.create(
        rx.button("Sign out", type="submit", variant="soft", id="sign-out", **props),
        action=backend_url("/auth/sign-out"),
        method="post",
    )


def account_page_body() -> rx.Component:
    state = AccountTabState
    return rx.center(
        rx.vstack(
            rx.heading("Your account", size="6"),
            rx.text("Signed in as ", rx.text.strong(state.username), id="account-username"),
            _messages(state.error, state.notice),
            rx.cond(
                state.auth_mode == "local",
                rx.vstack(
                    _form(
                        "/auth/password",
                        rx.heading("Change password", size="3"),
                        _field(
                            "Current password",
                            "current",
                            kind="password",
                            autocomplete="current-password",
                        ),
                        _field("New password", "new", kind="password", autocomplete="new-password"),
                        rx.button("Change password", type="submit", id="password-submit"),
                        form_id="password-form",
                    ),
                    NativeForm.create(
                        rx.button(
                            "Sign out everywhere else",
                            type="submit",
                            variant="soft",
                            id="sign-out-elsewhere",
                        ),
                        action=backend_url("/auth/sign-out-elsewhere"),
                        method="post",
                    ),
                    spacing="4",
                    width="100%",
                ),
            ),
            rx.hstack(rx.link("Back to your chats", href="/"), sign_out_button(), align="center"),
            spacing="4",
            width="min(28rem, 92vw)",
        ),
        padding="2rem 1rem",
    )


def signed_out_notice() -> rx.Component:
    """What a tab shows once its session ended elsewhere: nothing of the person's data."""
    return rx.el.main(
        rx.center(
            rx.card(
                rx.vstack(
                    rx.heading("You are signed out", size="5"),
                    rx.text("This session ended in another tab or on another device."),
                    # A new page load, not a route change: its socket connects anew, and
                    # the connect check gives the tab a fresh token (token_binding).
                    NativeForm.create(
                        rx.button("Sign in again", type="submit", id="sign-in-again"),
                        action="/sign-in",
                        method="get",
                    ),
                    spacing="3",
                ),
                id="signed-out-notice",
            ),
            min_height="100vh",
        )
    )
