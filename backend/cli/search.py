"""``chats search --user U QUERY [--json] [--words-only]``: every message of every chat, best
first, by its words and (unless ``--words-only`` or ``CHATS_EMBEDDER=off``) by meaning, with the
chats shared with the user (each such hit names its owner; those are matched by their words).

The command computes the vectors the directory lacks itself, with progress on stderr on a
long run, so it works on a data folder whether or not the app is running. A result that
lacks meaning-based hits (the embedder could not run) says so on stderr.
"""

from __future__ import annotations

import json

import click

from backend.accounts import ACCOUNTS_FILE
from backend.chats import ChatHit, Chats, split_snippet
from backend.cli.context import CliContext, pass_cli
from backend.cli.meaning import caught_up, embedder_of
from backend.cli.options import json_option, user_option
from backend.sharing import MessageHit, Sharing
from backend.sharing.search import DirectoryOf


@click.command("search")
@user_option
@click.argument("query")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--words-only", is_flag=True, help="Match words only; skip search by meaning.")
@json_option
@pass_cli
def search(
    cli: CliContext, user: str, query: str, limit: int, words_only: bool, as_json: bool
) -> None:
    """Search the messages of all of a user's chats, and of the chats shared with them, for
    QUERY: every word, in any order ("quoted words" as a phrase), the exact phrase first, and
    (in the user's own chats) messages meaning the same.

    One hit per line: chat id, message id, snippet (matches in **bold**), and for a chat
    shared with the user "shared by OWNER". With --json: an array of hits (chat_id,
    message_id, snippet with the directory's markers, rank, shared_by: null or the owner's
    id, username and the chat's title).
    """
    directory = cli.directory(user)
    own = _meaning_hits(cli, directory, query, limit) if not words_only else None
    hits = _hits(cli, directory, own, query, limit)
    if as_json:
        click.echo(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
        return
    for hit in hits:
        text = "".join(f"**{t}**" if marked else t for t, marked in split_snippet(hit.snippet))
        line = f"{hit.chat_id}\t{hit.message_id}\t{' '.join(text.split())}"
        if hit.shared_by is not None:
            line += f"\tshared by {hit.shared_by.owner_username}"
        click.echo(line)


def _hits(
    cli: CliContext, directory: Chats, own: list[ChatHit] | None, query: str, limit: int
) -> list[MessageHit]:
    """The user's own hits (``own`` when search by meaning ran, else by words), then the hits
    of the chats shared with them, ``limit`` in all."""
    accounts = cli.accounts() if (cli.settings.data_dir / ACCOUNTS_FILE).is_file() else None
    person = accounts.user(directory.directory_id) if accounts is not None else None
    if accounts is None or person is None:  # one person's folder: nothing is shared
        found = own if own is not None else directory.search_messages(query, limit=limit)
        return [MessageHit(**hit.model_dump()) for hit in found]
    with Sharing(cli.settings, accounts) as sharing:
        words = sharing.search_messages(person, directory, _opener(cli), query, limit=limit)
    if own is None:
        return words
    shared = [hit for hit in words if hit.shared_by is not None]
    return ([MessageHit(**hit.model_dump()) for hit in own] + shared)[:limit]


def _opener(cli: CliContext) -> DirectoryOf:
    """An owner's directory by user id, opened once for the command (closed at its end)."""

    def directory_of(owner_id: str) -> Chats:
        return cli.directory_by_id(owner_id)

    return directory_of


def _meaning_hits(
    cli: CliContext, directory: Chats, query: str, limit: int
) -> list[ChatHit] | None:
    """The fused hits, or None when search by meaning is off or cannot run."""
    meaning = caught_up(directory, embedder_of(cli))
    if meaning is None:
        return None
    result = meaning.search(query, limit=limit)
    if not result.complete:
        click.echo("incomplete: some messages have no meaning-based hits yet", err=True)
    return result.hits
