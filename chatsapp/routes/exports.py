"""Downloads of a person's own chats: the only way an export leaves the server.

An export is a file the browser downloads, so it cannot travel over the event websocket; these
plain HTTP routes serve it. Each request decides who is asking by itself, exactly as an event
does (:func:`chatsapp.auth.identity.identify`: the HttpOnly session cookie, the trusted proxy's
header, or the local user) and reads only that person's directory. A chat id that is not one
of theirs (someone else's, deleted, malformed) answers ``404``, the same as one that never
existed, so the routes reveal nothing about other people's chats. Nobody signed in: ``401``.

Only a download the person asked for is answered: a navigation (the browser's fetch metadata
says ``Sec-Fetch-Mode: navigate`` to a document or a download link). An ``<img>``, script,
frame or ``fetch`` asking for an export is refused (``403``) before it is built: a message's
``![x](/export/all.zip)`` would otherwise rebuild the whole export on every view, with the
viewer's cookie. A request without fetch metadata (an older browser, a script) is answered.

The file is written on a worker thread to a temporary file (a zip is written by path; a large
chat never sits in memory), streamed from disk in chunks, then deleted.

* ``GET /export/all.zip``              every chat, lossless (``docs/export-format.md``)
* ``GET /export/chat/<id>.json``       one chat, lossless, attachments inline
* ``GET /export/chat/<id>.md``         the visible branch as Markdown; a chat with images
                                       comes as a ``.zip`` (the ``.md`` and its images)
* ``GET /export/chat/<id>.md?leaf=<message id>``  the root → that message branch instead (the
                                       one a tab shows). A ``leaf`` not in the chat: ``404``;
                                       empty, over ``MAX_LEAF_CHARS`` or on a ``.json``: ``400``
"""

from __future__ import annotations

import shutil
import tempfile
import time
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from backend.chats import Chats
from backend.errors import NotFoundError
from backend.portability import all_chat_ids, write_chat, write_markdown, write_zip_export
from chatsapp.auth.identity import identify
from chatsapp.routes.share_link import process_sharing
from chatsapp.services import offload, services

EXPORT_PREFIX = "/export"
ALL_PATH = f"{EXPORT_PREFIX}/all.zip"
CHAT_PATH = EXPORT_PREFIX + "/chat/{chat_id}.{kind}"
KINDS = ("json", "md")
LEAF_PARAMETER = "leaf"
MAX_LEAF_CHARS = 256  # message ids are uuids or a source's ids; a longer one is no id of ours
CHUNK_BYTES = 256 * 1024
_MEDIA_TYPES = {
    ".zip": "application/zip",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
}


def chat_export_path(chat_id: str, kind: str) -> str:
    """Where one chat's export is served (``kind``: one of :data:`KINDS`).

    A Markdown export of the branch a tab shows appends ``?leaf=<message id>``.
    """
    return CHAT_PATH.format(chat_id=chat_id, kind=kind)


# What a browser's fetch metadata says for a download the person asked for: the address bar
# or a link (``document``), a link with ``download`` (``empty``, still a navigation).
_DOWNLOAD_DESTINATIONS = ("document", "empty")


def is_download_navigation(request: Request) -> bool:
    """Whether the request is a navigation (not a page's image, script, frame or fetch)."""
    mode = request.headers.get("sec-fetch-mode")
    destination = request.headers.get("sec-fetch-dest")
    return mode in (None, "navigate") and destination in (None, *_DOWNLOAD_DESTINATIONS)


def _not_a_navigation() -> Response:
    return PlainTextResponse("Exports download by navigation only.", status_code=403)


async def _directory(request: Request) -> Chats | None:
    peer = request.client.host if request.client else ""
    viewer = await offload(identify, dict(request.headers), peer)
    return None if viewer is None else services().directory(viewer.user_id)


def shared_with_me(user_id: str) -> list[dict[str, object]]:
    """The chats shared with the person, as the export's manifest lists them (no content:
    ``docs/sharing.md``); none for a directory without an account (``CHATS_AUTH=none``)."""
    person = services().accounts().user(user_id)
    if person is None:
        return []
    return [
        {
            "owner_id": chat.owner_id,
            "owner_username": chat.owner_username,
            "chat_id": chat.chat_id,
            "role": chat.role,
            "since": chat.since,
        }
        for chat in process_sharing().shared_with_me(person)
    ]


def _download(folder: Path, file: Path, name: str) -> StreamingResponse:
    # Streamed by hand, not FileResponse: servers with zero-copy file sending (granian)
    # open the file after the app has returned, when the temporary folder is gone already.
    return StreamingResponse(
        _chunks(folder, file),
        media_type=_MEDIA_TYPES[file.suffix],
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Content-Length": str(file.stat().st_size),
            "Cache-Control": "no-store",
        },
    )


async def _chunks(folder: Path, file: Path) -> AsyncIterator[bytes]:
    """The file's bytes; the temporary folder goes when they are sent (or the client leaves)."""
    try:
        with file.open("rb") as source:
            while chunk := await offload(source.read, CHUNK_BYTES):
                yield chunk
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _signed_out() -> Response:
    return PlainTextResponse("Sign in to export your chats.", status_code=401)


def _not_found(what: str = "chat") -> Response:
    return PlainTextResponse(f"No such {what}.", status_code=404)


def _bad_request(reason: str) -> Response:
    return PlainTextResponse(reason, status_code=400)


async def export_all(request: Request) -> Response:
    if not is_download_navigation(request):
        return _not_a_navigation()
    chats = await _directory(request)
    if chats is None:
        return _signed_out()
    folder = Path(tempfile.mkdtemp(prefix="chats-export-"))
    file = folder / "chats.zip"

    def write() -> None:
        # A chat deleted meanwhile is left out rather than failing the whole export.
        write_zip_export(
            chats,
            all_chat_ids(chats),
            str(file),
            on_refused=lambda *_: None,
            shared_with_me=shared_with_me(chats.directory_id),
        )

    try:
        await offload(write)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return _download(folder, file, f"chats-export-{time.strftime('%Y%m%d')}.zip")


async def export_chat(request: Request) -> Response:
    if not is_download_navigation(request):
        return _not_a_navigation()
    chats = await _directory(request)
    if chats is None:
        return _signed_out()
    chat_id, kind = request.path_params["chat_id"], request.path_params["kind"]
    if kind not in KINDS:
        return _not_found()
    leaf = request.query_params.get(LEAF_PARAMETER)
    if leaf is not None:
        if kind != "md":
            return _bad_request("Only a Markdown export follows a branch (leaf).")
        if not leaf or len(leaf) > MAX_LEAF_CHARS:
            return _bad_request(f"leaf is a message id of 1 to {MAX_LEAF_CHARS} characters.")
    try:
        await offload(chats.get_summary, chat_id)
    except (KeyError, ValueError):
        return _not_found()
    folder = Path(tempfile.mkdtemp(prefix="chats-export-"))
    try:
        if kind == "json":
            file = await offload(_write_json, chats, chat_id, folder)
        else:
            file = await offload(_write_markdown, chats, chat_id, folder, leaf)
    except NotFoundError as exc:  # the leaf is no message of this chat, or the chat went
        shutil.rmtree(folder, ignore_errors=True)
        return _not_found("message in this chat" if exc.kind == "message" else "chat")
    except (KeyError, ValueError):  # deleted between the check and the write
        shutil.rmtree(folder, ignore_errors=True)
        return _not_found()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return _download(folder, file, f"chat-{chat_id}{file.suffix}")


def _write_json(chats: Chats, chat_id: str, folder: Path) -> Path:
    file = folder / "chat.json"
    with file.open("w", encoding="utf-8") as out:
        write_chat(chats, chat_id, out)
    return file


def _write_markdown(chats: Chats, chat_id: str, folder: Path, leaf_id: str | None) -> Path:
    """The ``.md`` alone, or, when it links images, a ``.zip`` holding it and them.

    One pass: the images go into the ``.zip`` as the Markdown names them (the archive is
    opened at the first one), and the ``.md`` joins them at the end.
    """
    file = folder / "chat.md"
    archive = folder / "chat.zip"
    zipped: zipfile.ZipFile | None = None
    names: set[str] = set()

    def add_image(name: str, data: bytes) -> None:
        nonlocal zipped
        if zipped is None:
            zipped = zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED)
        if name not in names:
            names.add(name)
            zipped.writestr(name, data)

    try:
        with file.open("w", encoding="utf-8") as out:
            write_markdown(chats, chat_id, out, images=add_image, leaf_id=leaf_id)
        if zipped is None:
            return file
        zipped.write(file, f"{chat_id}.md")
    finally:
        if zipped is not None:
            zipped.close()
    return archive


def export_routes() -> Starlette:
    """Mounted in front of Reflex's app (``rx.App(api_transformer=...)``)."""
    return Starlette(
        routes=[
            Route(ALL_PATH, export_all, methods=["GET"]),
            Route(CHAT_PATH, export_chat, methods=["GET"]),
        ]
    )
