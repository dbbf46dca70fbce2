"""Options several chat subcommands share, defined once."""

from __future__ import annotations

import click

user_option = click.option(
    "--user",
    "user",
    required=True,
    metavar="U",
    help="Whose chats: a username or user id (the directory id when there are no accounts).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of lines.")
