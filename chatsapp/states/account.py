"""Accounts in the UI: the public sign-in pages, the signed-in person's menu, the admin page.

Only :class:`AuthPageTabState` is public (the guard lets anyone use it); everything else needs
a signed-in person, checked by :mod:`chatsapp.auth.guard` before each event. The forms that
take a password post to :mod:`chatsapp.routes.account_forms` natively; these states only prepare the
pages (messages, sign-up policy, invite) and run admin actions.
"""

from __future__ import annotations

import reflex as rx

from backend.accounts import User
from backend.errors import ChatsError
from chatsapp.auth.identity import current_viewer, peek_viewer
from chatsapp.services import offload, services
from chatsapp.states.rows import UserRow

MAX_MESSAGE_CHARS = 300


def _query(state: rx.State, name: str) -> str:
    value = state.router.url.query_parameters.get(name, "")
    return str(value)[:MAX_MESSAGE_CHARS] if value else ""


class AuthPageTabState(rx.State):
    """Per tab, public: what the sign-in, sign-up and first-run pages show."""

    error: str = ""
    notice: str = ""
    next_path: str = "/"
    invite: str = ""
    signup_policy: str = "closed"
    needs_setup: bool = False
    auth_mode: str = "local"

    async def _prepare(self) -> None:
        accounts = services().accounts()
        self.error, self.notice = _query(self, "error"), _query(self, "notice")
        self.next_path = _query(self, "next") or "/"
        self.invite = _query(self, "invite")
        self.auth_mode = services().settings.auth_mode
        # Only a local install is set up through the form (a proxy names people otherwise).
        self.needs_setup = self.auth_mode == "local" and await offload(accounts.needs_setup)
        self.signup_policy = await offload(accounts.signup_policy)

    @rx.event
    async def load_sign_in(self):  # noqa: ANN201
        await self._prepare()
        if self.needs_setup:
            return rx.redirect("/setup")
        if peek_viewer() is not None:
            return rx.redirect("/")
        return None

    @rx.event
    async def load_sign_up(self):  # noqa: ANN201
        await self._prepare()
        if peek_viewer() is not None:
            return rx.redirect("/")
        return None

    @rx.event
    async def load_setup(self):  # noqa: ANN201
        await self._prepare()
        if not self.needs_setup:
            return rx.redirect("/sign-in")
        return None


class AccountTabState(rx.State):
    """Per tab: who is signed in here (for the menu), and whether their session ended."""

    username: str = ""
    is_admin: bool = False
    auth_mode: str = "local"
    signed_out: bool = False  # set live by chatsapp.auth.signout_watch
    error: str = ""
    notice: str = ""

    @rx.event
    def load(self) -> None:
        viewer = current_viewer()
        self.username, self.is_admin = viewer.username, viewer.is_admin
        self.auth_mode = services().settings.auth_mode
        self.signed_out = False
        self.error, self.notice = _query(self, "error"), _query(self, "notice")


def _row(user: User) -> UserRow:
    return UserRow(id=user.id, username=user.username, role=user.role, disabled=user.disabled)


class AdminTabState(rx.State):
    """Per tab, admins only: users, the sign-up policy, invites."""

    users: list[UserRow] = []
    signup_policy: str = "closed"
    invite_link: str = ""
    message: str = ""
    allowed: bool = False

    def _admin_id(self) -> str:
        viewer = current_viewer()
        if not viewer.is_admin:
            raise PermissionError("Only an admin can do this.")
        return viewer.user_id

    async def _reload(self) -> None:
        accounts = services().accounts()
        actor = self._admin_id()
        self.users = [_row(u) for u in await offload(accounts.list_users, actor)]
        self.signup_policy = await offload(accounts.signup_policy)

    @rx.event
    async def load(self) -> None:
        self.message, self.invite_link = "", ""
        self.allowed = current_viewer().is_admin
        if self.allowed:
            await self._reload()

    async def _run(self, action: str, fn, *args) -> None:  # noqa: ANN001
        try:
            await offload(fn, self._admin_id(), *args)
            self.message = action
        except (ChatsError, PermissionError) as exc:
            self.message = str(exc)
        await self._reload()

    @rx.event
    async def create_user(self, form: dict[str, str]) -> None:
        role = "admin" if form.get("role") == "admin" else "user"
        username = str(form.get("username", ""))
        await self._run(
            f"Created {username}.",
            services().accounts().create_user,
            username,
            str(form.get("password", "")),
            role,
        )

    @rx.event
    async def disable(self, user_id: str) -> None:
        await self._run(
            "Disabled; their tabs are signed out.", services().accounts().disable_user, user_id
        )

    @rx.event
    async def enable(self, user_id: str) -> None:
        await self._run("Enabled.", services().accounts().enable_user, user_id)

    @rx.event
    async def reset_password(self, form: dict[str, str]) -> None:
        await self._run(
            "Password reset; they were signed out everywhere.",
            services().accounts().reset_password,
            str(form.get("user_id", "")),
            str(form.get("password", "")),
        )

    @rx.event
    async def set_policy(self, policy: str) -> None:
        await self._run(
            f"Sign-up is now {policy}.", services().accounts().set_signup_policy, policy
        )

    @rx.event
    async def new_invite(self) -> None:
        try:
            invite = await offload(services().accounts().create_invite, self._admin_id())
        except (ChatsError, PermissionError) as exc:
            self.message = str(exc)
            return
        self.invite_link = f"{self.router.url.origin}/sign-up?invite={invite.token}"
        self.message = "Invite created: share the link (it works once)."
