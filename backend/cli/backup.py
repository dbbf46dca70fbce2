"""``chats backup --out PATH``: a consistent snapshot of the data folder while the app runs; on
PostgreSQL, of every table at one instant (:mod:`backend.storage.pg_backup`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backend.cli.context import EXIT_PARTIAL, CliContext, fail, pass_cli
from backend.config import PostgresLocation
from backend.portability import backup_data_dir


@click.command("backup")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="The backup file to write (a .zip).",
)
@pass_cli
def backup(cli: CliContext, out: Path) -> None:
    """Back up accounts, server settings, every directory and every chat (SQLite online backup).

    Safe while the app serves: each database is copied as one committed state, writers are
    never stopped. On PostgreSQL (CHATS_STORAGE) every table is copied from one snapshot: one
    instant for every person and chat. Restore with `chats restore PATH`.
    """
    storage = cli.settings.storage
    with click.progressbar(length=1, label="Backing up", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        if isinstance(storage, PostgresLocation):
            from backend.storage.pg_backup import backup_postgresql

            taken = backup_postgresql(storage, out, progress=progress)
            click.echo(f"Backed up {len(taken.tables)} table(s), {taken.rows} row(s) to {out}.")
            return
        report = backup_data_dir(cli.settings.data_dir, out, progress=progress)
    click.echo(f"Backed up {len(report.databases)} database(s) to {out}.")
    for name, reason in report.failures:
        click.echo(f"chats: {name}: {reason}", err=True)
    if report.failures:
        fail(EXIT_PARTIAL)
