"""``chats search --user U QUERY [--json]``: every message of every chat, best first."""

from __future__ import annotations

import json

import click

from backend.chats import split_snippet
from backend.cli.context import CliContext, pass_cli
from backend.cli.options import json_option, user_option


@click.command("search")
@user_option
@click.argument("query")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@json_option
@pass_cli
def search(cli: CliContext, user: str, query: str, limit: int, as_json: bool) -> None:
    """Search the messages of all of a user's chats for QUERY: every word, in any order
    ("quoted words" as a phrase), the exact phrase first.

    One hit per line: chat id, message id, snippet (matches in **bold**). With --json: an
    array of hits (chat_id, message_id, snippet with the directory's markers, rank).
    """
    hits = cli.directory(user).search_messages(query, limit=limit)
    if as_json:
        click.echo(json.dumps([h.model_dump() for h in hits], ensure_ascii=False, indent=2))
        return
    for hit in hits:
        text = "".join(f"**{t}**" if marked else t for t, marked in split_snippet(hit.snippet))
        click.echo(f"{hit.chat_id}\t{hit.message_id}\t{' '.join(text.split())}")
