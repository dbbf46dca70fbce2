"""Search by meaning from the console: the embedder ``CHATS_EMBEDDER`` names, and a
directory's missing vectors computed on the spot (progress on stderr on a long run), so
``chats import`` and ``chats search`` work on a data folder whether or not the app runs."""

from __future__ import annotations

import click

from backend.chats import Chats
from backend.chats.meaning_search import MeaningSearch
from backend.cli.context import CliContext
from backend.meaning import Embedder, EmbedderUnavailable, embedder_from_setting

PROGRESS_FROM = 200
"""Catch-ups shorter than this print no progress."""


def embedder_of(cli: CliContext) -> Embedder | None:
    """The embedder ``CHATS_EMBEDDER`` names (None: off); a bad setting is bad usage. Built
    only: the model loads on the first text it embeds."""
    settings = cli.settings
    try:
        return embedder_from_setting(
            settings.embedder, model=settings.embedder_model, api_key=settings.embedder_api_key
        )
    except ValueError as error:
        raise click.UsageError(f"CHATS_EMBEDDER: {error}") from error


def caught_up(directory: Chats, embedder: Embedder | None) -> MeaningSearch | None:
    """``directory``'s search by meaning with every message embedded; None when it is off
    or cannot run (said on stderr)."""
    if embedder is None:
        return None
    meaning = MeaningSearch(directory, embedder)

    def progress(done: int, total: int) -> None:
        if total >= PROGRESS_FROM and (done == total or done % (PROGRESS_FROM // 2) < 32):
            click.echo(f"embedding messages: {done}/{total}", err=True)

    try:
        meaning.catch_up(progress=progress)
    except EmbedderUnavailable as error:
        click.echo(f"search by meaning unavailable ({error}): words only", err=True)
        return None
    return meaning
