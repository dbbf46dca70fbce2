"""``chats users add|list|disable|reset-password``: account administration from the console.

The CLI acts as :data:`~backend.accounts.CONSOLE_ACTOR`: whoever can run it on the server can
read the data folder anyway. ``users add --admin`` on a fresh install is the console way to
make the first admin (instead of the setup code); it adopts the former local user's chats as
the setup form would. Passwords come from a hidden prompt (asked twice) or, for scripts, from
the first line of standard input with ``--password-stdin``; never from an argument, which
would land in shell history and in every process listing.
"""

from __future__ import annotations

import json
import sys
from typing import NoReturn

import click

from backend.accounts import CONSOLE_ACTOR, Role, User
from backend.cli.context import EXIT_OK, CliContext, pass_cli, refuse
from backend.errors import ChatsError, UserNotFoundError

_PASSWORD_STDIN_HELP = "Read the password from the first line of standard input."


@click.group()
def users() -> None:
    """Manage accounts (for CHATS_AUTH=local, and admins in every mode)."""


@users.command("add")
@click.argument("username")
@click.option("--admin", is_flag=True, help="Make an admin (the first one adopts old chats).")
@click.option("--password-stdin", is_flag=True, help=_PASSWORD_STDIN_HELP)
@pass_cli
def add(cli: CliContext, username: str, admin: bool, password_stdin: bool) -> None:
    """Create the account USERNAME."""
    password = _read_password(password_stdin)
    role: Role = "admin" if admin else "user"
    try:
        user = cli.accounts().create_user(CONSOLE_ACTOR, username, password, role)
    except ChatsError as exc:
        _fail(refuse(username, exc))
    click.echo(f"Created {role} {user.username} (directory id {user.id}).")


@users.command("list")
@click.option("--json", "as_json", is_flag=True, help="An array of accounts, as JSON.")
@pass_cli
def list_users(cli: CliContext, as_json: bool) -> None:
    """List every account, disabled ones too."""
    accounts = cli.accounts().list_users(CONSOLE_ACTOR)
    if as_json:
        click.echo(json.dumps([user.model_dump() for user in accounts], indent=2))
        return
    for user in accounts:
        click.echo(_describe(user))


@users.command("disable")
@click.argument("usernames", nargs=-1, required=True)
@pass_cli
def disable(cli: CliContext, usernames: tuple[str, ...]) -> None:
    """Disable accounts; their open tabs are signed out."""
    status = EXIT_OK
    for username in usernames:
        try:
            user = _find(cli, username)
            cli.accounts().disable_user(CONSOLE_ACTOR, user.id)
        except ChatsError as exc:
            status = max(status, refuse(username, exc))
            continue
        click.echo(f"Disabled {user.username}.")
    if status != EXIT_OK:
        _fail(status)


@users.command("reset-password")
@click.argument("username")
@click.option("--password-stdin", is_flag=True, help=_PASSWORD_STDIN_HELP)
@pass_cli
def reset_password(cli: CliContext, username: str, password_stdin: bool) -> None:
    """Set a new password for USERNAME; they are signed out everywhere."""
    try:
        user = _find(cli, username)
    except ChatsError as exc:
        _fail(refuse(username, exc))
    password = _read_password(password_stdin)
    try:
        cli.accounts().reset_password(CONSOLE_ACTOR, user.id, password)
    except ChatsError as exc:
        _fail(refuse(username, exc))
    click.echo(f"Password of {user.username} reset; they were signed out everywhere.")


def _find(cli: CliContext, username: str) -> User:
    user = cli.accounts().user_by_username(username)
    if user is None:
        raise UserNotFoundError(username)
    return user


def _read_password(from_stdin: bool) -> str:
    if not from_stdin:
        password: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        return password
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        raise click.UsageError("--password-stdin: standard input holds no password")
    return line


def _describe(user: User) -> str:
    status = "disabled" if user.disabled else "active"
    return f"{user.username}\t{user.role}\t{status}\t{user.id}"


def _fail(status: int) -> NoReturn:
    raise click.exceptions.Exit(status)
