"""``chats export --user U [--format json|markdown] [--out PATH] [CHAT_ID ...]``."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from backend.chats import Chats
from backend.cli.context import EXIT_OK, EXIT_PARTIAL, CliContext, fail, pass_cli
from backend.cli.options import user_option
from backend.errors import ChatsError
from backend.portability import (
    all_chat_ids,
    write_chat,
    write_markdown,
    write_markdown_zip,
    write_zip_export,
)


@click.command("export")
@user_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "markdown"]),
    default="json",
    show_default=True,
    help="json: lossless (every branch, attachments); markdown: the visible branch, to read.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Where to write (one chat: default standard output; several: a .zip, required).",
)
@click.argument("chat_ids", nargs=-1, metavar="[CHAT_ID ...]")
@pass_cli
def export(
    cli: CliContext, user: str, fmt: str, out: Path | None, chat_ids: tuple[str, ...]
) -> None:
    """Export chats (all of the user's when no CHAT_ID is given).

    One CHAT_ID exports one document (a .json, or a .md whose images go to an
    attachments/ folder beside it). Several chats, or all, make a .zip: one JSON per chat
    plus attachments, or one .md per chat plus images. See docs/export-format.md.
    """
    chats = cli.directory(user)
    single = len(chat_ids) == 1 and (out is None or out.suffix.lower() != ".zip")
    if single:
        _export_one(chats, chat_ids[0], fmt, out)
        return
    if out is None:
        raise click.UsageError("exporting several chats writes a .zip: give --out PATH")
    ids = list(chat_ids) or all_chat_ids(chats)
    status = EXIT_OK
    refused: list[str] = []

    def on_refused(chat_id: str, error: Exception) -> None:
        refused.append(chat_id)
        click.echo(f"chats: {chat_id}: {error}", err=True)

    if fmt == "json":
        with click.progressbar(length=len(ids), label="Exporting", file=sys.stderr) as bar:
            exported = write_zip_export(chats, _counted(ids, bar), str(out), on_refused=on_refused)
    else:
        exported = _markdown_zip(chats, ids, out, on_refused)
    if refused:
        status = EXIT_PARTIAL
    click.echo(f"Exported {len(exported)} chat(s) to {out}.")
    if status != EXIT_OK:
        fail(status)


def _counted(ids: list[str], bar: Any) -> Iterator[str]:
    for chat_id in ids:
        yield chat_id
        bar.update(1)


def _export_one(chats: Chats, chat_id: str, fmt: str, out: Path | None) -> None:
    try:
        chats.get_summary(chat_id)
    except (KeyError, ValueError) as exc:
        click.echo(f"chats: {chat_id}: {exc}", err=True)
        fail(EXIT_PARTIAL)
    buffer = io.StringIO()
    if fmt == "json":
        write_chat(chats, chat_id, buffer)
    else:
        folder = out.parent if out is not None else None

        def save_image(relative: str, data: bytes) -> None:
            if folder is not None:  # on standard output the links stay, the files do not
                target = folder / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

        write_markdown(chats, chat_id, buffer, images=save_image)
    if out is None:
        click.echo(buffer.getvalue())
    else:
        out.write_text(buffer.getvalue(), encoding="utf-8")
        click.echo(f"Exported {chat_id} to {out}.", err=True)


def _markdown_zip(
    chats: Chats, ids: list[str], out: Path, on_refused: Callable[[str, Exception], None]
) -> list[str]:
    live = []
    for chat_id in ids:
        try:
            chats.get_summary(chat_id)
        except (KeyError, ValueError, ChatsError) as exc:
            on_refused(chat_id, exc)
            continue
        live.append(chat_id)
    return write_markdown_zip(chats, live, str(out))
