"""``chats repair [--user U]``: index and orphan reconciliation of one directory or all."""

from __future__ import annotations

import click

from backend.cli.context import CliContext, pass_cli


@click.command("repair")
@click.option("--user", "user", metavar="U", help="Only this user's directory (default: all).")
@pass_cli
def repair(cli: CliContext, user: str | None) -> None:
    """Reconcile directories with their chat files.

    Opening a directory purges chats past the soft-delete window and removes files of
    purged or replaced generations; then every chat's messages are compared with the
    cross-chat message index and the index is corrected (added, updated, removed).
    """
    ids = [cli.directory_id(user)] if user is not None else cli.directory_ids()
    for directory_id in ids:
        chats = cli.directory_by_id(directory_id)
        result = chats.repair_index(full=True)
        click.echo(
            f"{directory_id}: {result.chats_checked} chats checked, "
            f"{result.documents_added} added, {result.documents_updated} updated, "
            f"{result.documents_removed} removed, {result.leases_released} leases released"
        )
