"""The ``chats`` command: the root group and its ``--data-dir`` option.

Each subcommand (group) is its own module and is added to :data:`SUBCOMMANDS` here; this
module holds nothing else, so it never grows with the features (the counter-example is a
single ``cli.py`` that takes every command).

Why Click: the spec's exit statuses are Click's own (usage errors exit 2); it has a test runner
(``click.testing.CliRunner``), hidden password prompts with confirmation, and
``click.progressbar`` for the long commands to come (export, import, backup), which draws only
on a terminal and stays silent in pipes and tests.
"""

from __future__ import annotations

from pathlib import Path

import click

from backend import log_records
from backend.cli.backup import backup
from backend.cli.context import CliContext
from backend.cli.export import export
from backend.cli.import_chats import import_chats
from backend.cli.list_chats import list_chats
from backend.cli.migrate import migrate
from backend.cli.pins import pin, unpin
from backend.cli.projects import projects
from backend.cli.repair import repair
from backend.cli.restore import restore
from backend.cli.search import search
from backend.cli.users import users

SUBCOMMANDS: tuple[click.Command, ...] = (
    users,
    list_chats,
    projects,
    pin,
    unpin,
    search,
    export,
    import_chats,
    backup,
    restore,
    repair,
    migrate,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The app's data folder (default: $CHATS_DATA_DIR, else ./data).",
)
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None) -> None:
    """Work on a Chats data folder, safely while the app runs."""
    context = CliContext.from_options(data_dir)
    ctx.obj = context
    ctx.call_on_close(context.close)


for _command in SUBCOMMANDS:
    cli.add_command(_command)


def main() -> None:
    """The console script ``chats``."""
    log_records.install()  # a lone surrogate in a file being imported never crashes a log line
    cli(prog_name="chats")
