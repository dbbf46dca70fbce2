"""``chats import --user U PATH [--no-embed]``: the format is detected from the content; what
was imported is then embedded for search by meaning (``backend.cli.meaning``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from backend.cli.context import EXIT_PARTIAL, EXIT_USAGE, CliContext, fail, pass_cli
from backend.cli.meaning import caught_up, embedder_of
from backend.cli.options import user_option
from backend.errors import InvalidInputError
from backend.portability import import_file_bounded


@click.command("import")
@user_option
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--no-embed",
    is_flag=True,
    help="Leave search by meaning's vectors to the app or the next `chats search`.",
)
@pass_cli
def import_chats(cli: CliContext, user: str, path: Path, no_embed: bool) -> None:
    """Import chats from PATH into a user's directory.

    Accepted (detected from the content, not the name): this project's export (.json or
    .zip), a ChatGPT data export (conversations.json or the export .zip, images included),
    a Claude data export, an Open WebUI chat export. Importing the same file again creates
    no duplicates: unchanged chats are skipped, chats with new messages get them added.
    A conversation that cannot be read is named on stderr (exit 1); the rest import. The
    file is read in a child process with memory and processor bounds. Then the messages
    are embedded for search by meaning (progress on stderr), unless --no-embed or
    CHATS_EMBEDDER=off; the app's background worker, or the next `chats search`, embeds
    whatever is left.
    """
    embedder = None if no_embed else embedder_of(cli)  # a bad setting refused before importing
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
    caught_up(chats, embedder)
    for failure in report.failures:
        click.echo(f"chats: {failure.item}: {failure.reason}", err=True)
    if not report.ok:
        fail(EXIT_PARTIAL)
