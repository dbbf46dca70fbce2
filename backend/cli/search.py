"""``chats search --user U QUERY [--json]``: every message of every chat, best first, with
the chats shared with the user (each such hit names its owner)."""

from __future__ import annotations

import json

import click

from backend.accounts import ACCOUNTS_FILE
from backend.chats import Chats, split_snippet
from backend.cli.context import CliContext, pass_cli
from backend.cli.options import json_option, user_option
from backend.sharing import MessageHit, Sharing
from backend.sharing.search import DirectoryOf


@click.command("search")
@user_option
@click.argument("query")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@json_option
@pass_cli
def search(cli: CliContext, user: str, query: str, limit: int, as_json: bool) -> None:
    """Search the messages of all of a user's chats, and of the chats shared with them, for
    QUERY (a phrase).

    One hit per line: chat id, message id, snippet (matches in **bold**), and for a chat
    shared with the user "shared by OWNER". With --json: an array of hits (chat_id,
    message_id, snippet with the directory's markers, rank, shared_by: null or the owner's
    id, username and the chat's title).
    """
    hits = _hits(cli, user, query, limit)
    if as_json:
        click.echo(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
        return
    for hit in hits:
        text = "".join(f"**{t}**" if marked else t for t, marked in split_snippet(hit.snippet))
        line = f"{hit.chat_id}\t{hit.message_id}\t{' '.join(text.split())}"
        if hit.shared_by is not None:
            line += f"\tshared by {hit.shared_by.owner_username}"
        click.echo(line)


def _hits(cli: CliContext, user: str, query: str, limit: int) -> list[MessageHit]:
    directory = cli.directory(user)
    accounts = cli.accounts() if (cli.settings.data_dir / ACCOUNTS_FILE).is_file() else None
    person = accounts.user(directory.directory_id) if accounts is not None else None
    if accounts is None or person is None:  # one person's folder: nothing is shared
        hits = directory.search_messages(query, limit=limit)
        return [MessageHit(**hit.model_dump()) for hit in hits]
    with Sharing(cli.settings, accounts) as sharing:
        return sharing.search_messages(person, directory, _opener(cli), query, limit=limit)


def _opener(cli: CliContext) -> DirectoryOf:
    """An owner's directory by user id, opened once for the command (closed at its end)."""

    def directory_of(owner_id: str) -> Chats:
        return cli.directory_by_id(owner_id)

    return directory_of
