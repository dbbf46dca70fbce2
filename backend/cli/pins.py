"""``chats pin|unpin --user U CHAT_ID ...``: the sidebar's "Pinned" group from the console.

``chats list`` shows which chats are pinned (``pinned`` at the end of a line; ``pinned_at``
with ``--json``). Each id is pinned (or unpinned) on its own: a refused one is named on
stderr and the others still change (exit status 1, or 2 for an id that can never be valid).
"""

from __future__ import annotations

from collections.abc import Callable

import click

from backend.chats import Chats, ChatSummary
from backend.cli.context import CliContext, fail, pass_cli, refuse
from backend.cli.options import user_option
from backend.errors import ChatsError


def _each(
    cli: CliContext, user: str, ids: tuple[str, ...], act: Callable[[Chats, str], ChatSummary]
) -> None:
    chats = cli.directory(user)
    status = 0
    for chat_id in ids:
        try:
            summary = act(chats, chat_id)
        except ChatsError as error:
            status = max(status, refuse(chat_id, error))
            continue
        click.echo(f"{summary.id}\t{'pinned' if summary.pinned else 'not pinned'}")
    if status:
        fail(status)


@click.command("pin")
@user_option
@click.argument("chat_ids", nargs=-1, required=True)
@pass_cli
def pin(cli: CliContext, user: str, chat_ids: tuple[str, ...]) -> None:
    """Pin chats to the top of the user's sidebar (newest pin first)."""
    _each(cli, user, chat_ids, lambda chats, chat_id: chats.pins.pin(chat_id))


@click.command("unpin")
@user_option
@click.argument("chat_ids", nargs=-1, required=True)
@pass_cli
def unpin(cli: CliContext, user: str, chat_ids: tuple[str, ...]) -> None:
    """Take chats out of the user's "Pinned" group."""
    _each(cli, user, chat_ids, lambda chats, chat_id: chats.pins.unpin(chat_id))
