"""``chats projects list|create|rename|move|delete|add-file --user U``: a person's projects.

A PROJECT argument is a project's id or its exact name (a name two projects share is refused:
give the id). Refusals name the item and why on stderr, and change nothing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import NoReturn

import click

from backend.cli.context import CliContext, fail, pass_cli, refuse
from backend.cli.options import json_option, user_option
from backend.errors import ChatsError, InputTooLargeError, InvalidInputError, NotFoundError
from backend.projects import Project, Projects, read_document, single_chunk
from backend.uploads import attachment_limits


@click.group()
def projects() -> None:
    """List a person's projects and move chats in and out of them."""


def _projects(cli: CliContext, user: str) -> Projects:
    window = cli.settings.soft_delete_window_s
    return Projects(cli.directory(user), soft_delete_window_s=window)


def _find(found: Projects, key: str) -> Project:
    """The project whose id or exact name is ``key``."""
    for project in found.list_projects():
        if project.id == key:
            return project
    named = [project for project in found.list_projects() if project.name == key]
    if len(named) > 1:
        raise InvalidInputError(f"{len(named)} projects are named {key!r}: give the id")
    if not named:
        raise NotFoundError("project", key)
    return named[0]


def _refuse(item: str, error: ChatsError) -> NoReturn:
    fail(refuse(item, error))


@projects.command("list")
@user_option
@json_option
@pass_cli
def list_projects(cli: CliContext, user: str, as_json: bool) -> None:
    """One project per line: id, name, its chats' ids (comma-separated).

    With --json: an array of projects (id, name, instructions, use_personal_memory,
    created_at, updated_at, chats, files).
    """
    found = _projects(cli, user)
    rows = []
    for project in found.list_projects():
        chats = [summary.id for summary in found.chats_of(project.id)]
        files = [file.name for file in found.files.list_files(project.id)]
        rows.append((project, chats, files))
    if as_json:
        documents = [
            {**_document(project), "chats": chats, "files": files} for project, chats, files in rows
        ]
        click.echo(json.dumps(documents, ensure_ascii=False, indent=2))
        return
    for project, chats, _files in rows:
        click.echo(f"{project.id}\t{project.name}\t{','.join(chats)}")


def _document(project: Project) -> dict[str, object]:
    return {
        "id": project.id,
        "name": project.name,
        "instructions": project.instructions,
        "use_personal_memory": project.use_personal_memory,
        "created_at": project.created_at,
        "updated_at": project.updated_at,
    }


@projects.command("create")
@user_option
@click.argument("name")
@click.option("--instructions", default="", help="Added to the prompt of every chat in it.")
@pass_cli
def create(cli: CliContext, user: str, name: str, instructions: str) -> None:
    """Create the project NAME; prints its id."""
    try:
        project = _projects(cli, user).create(name, instructions=instructions)
    except ChatsError as exc:
        _refuse(name, exc)
    click.echo(project.id)


@projects.command("rename")
@user_option
@click.argument("project")
@click.argument("name")
@pass_cli
def rename(cli: CliContext, user: str, project: str, name: str) -> None:
    """Rename PROJECT to NAME."""
    found = _projects(cli, user)
    try:
        found.rename(_find(found, project).id, name)
    except ChatsError as exc:
        _refuse(project, exc)


@projects.command("move")
@user_option
@click.argument("chat_ids", metavar="CHAT_ID...", nargs=-1, required=True)
@click.option("--to", "target", metavar="PROJECT", help="The project to move the chats into.")
@click.option("--out", is_flag=True, help="Take the chats out of their project.")
@pass_cli
def move(
    cli: CliContext, user: str, chat_ids: tuple[str, ...], target: str | None, out: bool
) -> None:
    """Move chats into a project (--to PROJECT) or out of theirs (--out)."""
    if out == (target is not None):
        raise click.UsageError("give exactly one of --to PROJECT and --out")
    found = _projects(cli, user)
    try:
        project_id = None if target is None else _find(found, target).id
    except ChatsError as exc:
        _refuse(target or "", exc)
    status = 0
    for chat_id in chat_ids:
        try:
            found.move_chat(chat_id, project_id)
        except ChatsError as exc:
            status = max(status, refuse(chat_id, exc))
    if status:
        fail(status)


@projects.command("delete")
@user_option
@click.argument("project")
@click.option(
    "--chats",
    "chats",
    type=click.Choice(["move-out", "delete"]),
    required=True,
    help="What becomes of its chats: moved to the loose list, or deleted (restorable).",
)
@pass_cli
def delete(cli: CliContext, user: str, project: str, chats: str) -> None:
    """Delete PROJECT, its files and memory; its chats move out or are deleted."""
    found = _projects(cli, user)
    try:
        result = found.delete(
            _find(found, project).id, "delete" if chats == "delete" else "move_out"
        )
    except ChatsError as exc:
        _refuse(project, exc)
    click.echo(f"moved out {len(result.moved_out)}, deleted {len(result.deleted)}")


@projects.command("add-file")
@user_option
@click.argument("project")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_cli
def add_file(cli: CliContext, user: str, project: str, path: Path) -> None:
    """Add a document to PROJECT (the attachment limits and types apply)."""
    found = _projects(cli, user)
    limits = attachment_limits(cli.settings)
    try:
        target = _find(found, project)
        size = path.stat().st_size
        if size > limits.max_file_bytes:  # refused before reading it into memory
            raise InputTooLargeError(path.name, size, limits.max_file_bytes)
        upload = asyncio.run(read_document(path.name, single_chunk(path.read_bytes()), limits))
        added = found.files.add_upload(target.id, upload)
    except ChatsError as exc:
        _refuse(str(path), exc)
    click.echo(f"{added.id}\t{added.name}\t{added.text_chars} characters")
