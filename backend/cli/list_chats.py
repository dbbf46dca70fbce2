"""``chats list --user U [--json]``: every live chat (archived ones too), newest first."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from backend.cli.context import CliContext, pass_cli
from backend.cli.options import json_option, user_option
from backend.portability import all_chat_ids


@click.command("list")
@user_option
@json_option
@pass_cli
def list_chats(cli: CliContext, user: str, as_json: bool) -> None:
    """List a user's chats, one per line: id, last update (UTC), title, and "pinned" for a
    pinned chat. Temporary chats are never listed.

    With --json: an array of chat summaries (id, title, created_at, updated_at,
    last_message_preview, archived_at, pinned_at, expires_at; times in ms).
    """
    chats = cli.directory(user)
    summaries = [chats.get_summary(chat_id) for chat_id in all_chat_ids(chats)]
    if as_json:
        click.echo(json.dumps([s.model_dump() for s in summaries], ensure_ascii=False, indent=2))
        return
    for summary in summaries:
        updated = datetime.fromtimestamp(summary.updated_at / 1000, UTC)
        pinned = "\tpinned" if summary.pinned else ""
        click.echo(f"{summary.id}\t{updated:%Y-%m-%d %H:%M}\t{summary.title}{pinned}")
