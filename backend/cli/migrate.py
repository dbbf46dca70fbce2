"""``chats migrate --to TARGET [--from SOURCE] [--root ROOT]``: move everything between the
SQLite data folder and PostgreSQL, with the app stopped (``backend.portability.migrate``).

``TARGET`` and ``SOURCE`` are each a ``postgresql://`` URL or a data folder; the source
defaults to ``CHATS_STORAGE`` (the data folder when unset). ``ROOT`` is the logical root the
PostgreSQL scopes of directories and chats are named under: by default the app's own
(:data:`APP_ROOT`), so the app started on that URL finds every person's chats. Progress goes
to stderr, one line per person and per chat; the report to stdout. A URL's password is
never printed.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from backend.cli.context import CliContext, fail, pass_cli, refuse
from backend.config import PostgresLocation, StorageChoice, parse_storage
from backend.errors import ChatsError
from backend.portability.migrate import (
    MigrationEvent,
    MigrationReport,
    PersonStarted,
    UnitCopied,
    UnitSkipped,
)
from backend.portability.migrate import (
    migrate as run_migration,
)
from backend.portability.migrate_sides import PostgresSide, Side, SqliteSide

APP_ROOT = Path("/chats")
"""The root the app names directories and chats under on PostgreSQL, whatever the node's data
folder (``backend.config.POSTGRES_ROOT`` on branch h2/pgwire: use it here once merged)."""


def _storage(value: str) -> StorageChoice | Path:
    """A ``postgresql://`` URL, or a folder (anything without a scheme)."""
    if "://" not in value:
        return Path(value)
    try:
        return parse_storage(value)
    except ValueError as exc:  # the message never repeats a password
        raise click.UsageError(str(exc)) from exc


def _side(choice: StorageChoice | Path, root: Path, data_dir: Path) -> Side:
    if isinstance(choice, PostgresLocation):
        return PostgresSide(choice, root)
    return SqliteSide(choice if isinstance(choice, Path) else data_dir)


class _Progress:
    """Progress lines on stderr: one per server file, person and chat."""

    def __init__(self) -> None:
        self.chat = 0
        self.chats = 0
        self.skipped = 0

    def __call__(self, event: MigrationEvent) -> None:
        if isinstance(event, PersonStarted):
            self.chat, self.chats = 0, event.chats
            click.echo(
                f"person {event.index}/{event.total} {event.directory_id}: {event.chats} chat(s)",
                err=True,
            )
        elif isinstance(event, UnitCopied):
            name = event.unit.name
            if "/chats/" in name:
                self.chat += 1
                messages = event.messages
                click.echo(
                    f"  chat {self.chat}/{self.chats} {name.rsplit('/', 1)[1]}: "
                    f"{messages:,} message(s), {event.seconds:.2f} s",
                    err=True,
                )
            else:
                click.echo(f"  {name}: {event.copied.rows:,} row(s)", err=True)
        elif isinstance(event, UnitSkipped):
            self.chat += "/chats/" in event.unit.name
            self.skipped += 1


def _summary(report: MigrationReport) -> str:
    if report.already_complete:
        return f"Nothing to do: {report.target} already holds this migration from {report.source}."
    megabytes = report.bytes / 1_000_000
    lines = [
        f"Migrated {report.people} person(s), {report.chats} chat(s), {report.messages:,} "
        f"message(s), {report.attachments} attachment(s), {megabytes:.1f} MB in "
        f"{report.seconds:.1f} s",
        f"  from {report.source}",
        f"  to {report.target}",
    ]
    if report.units_already_finished:
        lines.append(f"  ({report.units_already_finished} unit(s) finished by an earlier run)")
    return "\n".join(lines)


@click.command("migrate")
@click.option("--to", "to", required=True, help="postgresql://… URL, or a data folder to fill.")
@click.option(
    "--from",
    "from_",
    default=None,
    help="postgresql://… URL, or a data folder (default: CHATS_STORAGE, else the data folder).",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Logical root naming the PostgreSQL scopes (default: {APP_ROOT}, the app's).",
)
@pass_cli
def migrate(cli: CliContext, to: str, from_: str | None, root: Path | None) -> None:
    """Copy accounts, settings, sharing, every directory and chat to the other engine.

    Run it with the app stopped. Resumable after a kill; a second run changes nothing; a
    target that holds other data is refused.
    """
    data_dir = cli.settings.data_dir
    logical_root = Path(os.path.abspath(root or APP_ROOT))
    source_choice = _storage(from_) if from_ is not None else cli.settings.storage
    sides: list[Side] = []
    try:
        sides.append(_side(source_choice, logical_root, data_dir))
        sides.append(_side(_storage(to), logical_root, data_dir))
        report = run_migration(sides[0], sides[1], listener=_Progress())
    except ChatsError as error:
        fail(refuse("migrate", error))
    finally:
        for side in sides:
            side.close()
    click.echo(_summary(report))
