"""``chats import --user U PATH``: the format is detected from the content."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backend.cli.context import EXIT_PARTIAL, EXIT_USAGE, CliContext, fail, pass_cli
from backend.cli.options import user_option
from backend.errors import InvalidInputError
from backend.portability import import_file_bounded


@click.command("import")
@user_option
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_cli
def import_chats(cli: CliContext, user: str, path: Path) -> None:
    """Import chats from PATH into a user's directory.

    Accepted (detected from the content, not the name): this project's export (.json or
    .zip), a ChatGPT data export (conversations.json or the export .zip, images included),
    a Claude data export, an Open WebUI chat export. Importing the same file again creates
    no duplicates: unchanged chats are skipped, chats with new messages get them added.
    A conversation that cannot be read is named on stderr (exit 1); the rest import. The
    file is read in a child process with memory and processor bounds.
    """
    chats = cli.directory(user)
    total = path.stat().st_size
    with click.progressbar(length=total, label="Importing", file=sys.stderr) as bar:
        seen = 0

        def progress(done: int, _total: int) -> None:
            nonlocal seen
            bar.update(done - seen)
            seen = done

        try:
            report = import_file_bounded(chats, path, progress=progress)
        except InvalidInputError as exc:
            click.echo(f"chats: {exc}", err=True)
            fail(EXIT_USAGE)
    click.echo(report.summary())
    for failure in report.failures:
        click.echo(f"chats: {failure.item}: {failure.reason}", err=True)
    if not report.ok:
        fail(EXIT_PARTIAL)
