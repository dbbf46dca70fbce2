"""``chats restore PATH``: bring a backup back into the data folder, or a PostgreSQL backup into
an empty PostgreSQL schema."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backend.cli.context import EXIT_PARTIAL, EXIT_USAGE, CliContext, fail, pass_cli
from backend.config import PostgresLocation
from backend.errors import InvalidInputError
from backend.portability import restore_data_dir
from backend.portability.backup import backup_engine


@click.command("restore")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_cli
def restore(cli: CliContext, path: Path) -> None:
    """Restore the backup PATH (made by `chats backup`) into the data folder.

    Each database is written back through SQLite's online backup API (an app holding it
    open sees the restored content, never a torn file); then every restored directory's
    message index is repaired. Databases not in the backup are left alone.

    On PostgreSQL (CHATS_STORAGE) a PostgreSQL backup is written into an empty schema, in
    one transaction; a schema holding any row is refused. A backup of the other engine is
    refused: `chats migrate` moves data between engines.
    """
    storage = cli.settings.storage
    try:
        engine = backup_engine(path)
        if engine != ("postgresql" if isinstance(storage, PostgresLocation) else "sqlite"):
            raise InvalidInputError(
                f"{path} is a backup of a {engine} installation and CHATS_STORAGE names the "
                "other engine: restore it on its own engine, then use chats migrate"
            )
        if isinstance(storage, PostgresLocation):
            from backend.storage.pg_backup import restore_postgresql

            restored = restore_postgresql(path, storage)
            click.echo(f"Restored {len(restored.tables)} table(s), {restored.rows} row(s).")
            return
    except InvalidInputError as exc:
        click.echo(f"chats: {exc}", err=True)
        fail(EXIT_USAGE)
    data_dir = cli.settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with click.progressbar(length=1, label="Restoring", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        try:
            report = restore_data_dir(path, data_dir, progress=progress)
        except InvalidInputError as exc:
            click.echo(f"chats: {exc}", err=True)
            fail(EXIT_USAGE)
    click.echo(f"Restored {len(report.databases)} database(s) into {data_dir}.")
    for name, reason in report.failures:
        click.echo(f"chats: {name}: {reason}", err=True)
    if report.failures:
        fail(EXIT_PARTIAL)
