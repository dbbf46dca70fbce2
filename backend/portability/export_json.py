"""Lossless JSON export: one chat document, or a ``.zip`` of many (``docs/export-format.md``).

A chat document holds the whole tree (every branch, in insertion order, which is also what
makes the visible leaf the newest row on import), compactions, the conversation record, the
session state, title and times. Messages are written in their **stored form**
(``Session.stored_tree``: no decode and re-encode): an inline image or file is a pointer
``attachment:sha256:<hex>`` and its bytes sit once in ``attachments`` (base64, in a single
document) or as ``attachments/<hex>`` (in a ``.zip``, shared by every chat of the zip).
Documents are written as a stream, message by message, so memory stays bounded by the
largest message, not the chat.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from backend.chats import Chats, ChatSummary
from backend.clock import now_ms
from backend.portability.document import (
    ATTACHMENTS_FOLDER,
    CHAT_FORMAT,
    CHATS_FOLDER,
    EXPORT_VERSION,
    MANIFEST_NAME,
    ZIP_EXPORT_FORMAT,
    check_exportable,
)
from backend.portability.project_document import PROJECTS_NAME, projects_document
from backend.runtime.pg_store import runtime_store_for
from backend.sessions import Payload

PROGRESS_EVERY = 500
AttachmentSink = Callable[[Payload], None]
ProgressCallback = Callable[[int], None]
"""Called with the number of messages written since the last call."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _dump(value: Any) -> str:
    """Compact UTF-8 JSON; a value holding a lone surrogate (UTF-8 has none) is escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if _LONE_SURROGATE.search(text):
        return json.dumps(value, separators=(",", ":"))
    return text


def write_chat(
    chats: Chats,
    chat_id: str,
    out: IO[str],
    *,
    attachment: AttachmentSink | None = None,
    progress: ProgressCallback | None = None,
) -> None:
    """Write one chat document to ``out``.

    With ``attachment`` (a ``.zip`` export) each payload is handed to it and the document's
    ``attachments`` lists hashes and media types only; without, the bytes are inline.
    """
    summary = chats.get_summary(chat_id)
    check_exportable(summary)
    chat = chats.get_chat(chat_id)
    source = chats.imports.source_of(chat_id)
    record = state = None
    compactions: list[dict[str, Any]] = []
    if chat.has_file:
        store = runtime_store_for(chat.database)
        conversation = store.load_conversation(chat_id)
        if conversation is not None:
            record = dataclasses.asdict(conversation)
            record["participant_ids"] = list(conversation.participant_ids)
            record["archived_at"] = summary.archived_at  # the directory keeps archive
            loaded = store.load_state(chat_id)
            if loaded.updated_at or loaded.data:
                state = {"data": loaded.data, "updated_at": loaded.updated_at}
        compactions = [dataclasses.asdict(c) for c in chat.session.get_compactions()]
    head = {
        "format": CHAT_FORMAT,
        "version": EXPORT_VERSION,
        "chat": summary.model_dump(),
        "source": None if source is None else {"format": source.format, "id": source.source_id},
        "conversation": record,
        "session_state": state,
        "compactions": compactions,
    }
    text = _dump(head)
    out.write(text[:-1] + ',"messages":[')
    media_types: dict[str, str] = {}
    inline: dict[str, bytes] = {}
    written = 0
    if chat.has_file:
        session = chat.session
        for entry in session.stored_tree():
            new = entry.attachments - media_types.keys()
            if new:
                for digest, (data, media_type) in session.load_attachments(new).items():
                    media_types[digest] = media_type
                    if attachment is not None:
                        attachment(Payload(digest, data, media_type))
                    else:
                        inline[digest] = data
            # The stored text is already this format's message JSON: written as it is.
            out.write(
                ("," if written else "")
                + f'{{"parent_id":{_dump(entry.parent_id)},"created_at":{entry.created_at},'
                + f'"message":{entry.content}}}'
            )
            written += 1
            if progress is not None and written % PROGRESS_EVERY == 0:
                progress(PROGRESS_EVERY)
    if progress is not None and written % PROGRESS_EVERY:
        progress(written % PROGRESS_EVERY)
    listing = {
        digest: {"media_type": media_type}
        | (
            {"data": base64.b64encode(inline[digest]).decode("ascii")}
            if digest in inline
            else {"path": ATTACHMENTS_FOLDER + digest}
        )
        for digest, media_type in sorted(media_types.items())
    }
    out.write('],"attachments":' + _dump(listing) + "}")


def write_zip_export(
    chats: Chats,
    chat_ids: Iterable[str],
    path: str,
    *,
    progress: ProgressCallback | None = None,
    on_refused: Callable[[str, Exception], None] | None = None,
    shared_with_me: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """A ``.zip`` export: ``manifest.json``, ``chats/<id>.json`` each, ``attachments/<hash>``,
    and ``projects.json``: the person's projects, with the chats of the zip that are in them.

    ``shared_with_me``: the chats others share with the person, listed in the manifest as
    plain values (owner, chat id, role, since) without their content: fork and export copy a
    transcript where its owner cannot take it back, so that stays the owner's to do
    (``docs/sharing.md``).

    Returns the ids written; a chat that cannot be exported (deleted meanwhile) is reported
    to ``on_refused`` and left out.
    """
    written: list[str] = []
    entries: list[dict[str, Any]] = []
    # Level 1: most of deflate's size win at a fraction of the default level's time.
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zip_file:
        stored: set[str] = set()
        pending: list[Payload] = []  # a zip takes no new member while a chat's is open

        def add_attachment(payload: Payload) -> None:
            if payload.hash not in stored:
                stored.add(payload.hash)
                pending.append(payload)

        for chat_id in chat_ids:
            name = f"{CHATS_FOLDER}{chat_id}.json"
            try:
                summary = chats.get_summary(chat_id)
                with zip_file.open(name, "w") as raw, _text(raw) as out:
                    write_chat(chats, chat_id, out, attachment=add_attachment, progress=progress)
            except (KeyError, ValueError) as exc:
                if on_refused is None:
                    raise
                on_refused(chat_id, exc)
                continue
            finally:
                for payload in pending:
                    zip_file.writestr(ATTACHMENTS_FOLDER + payload.hash, payload.data)
                pending.clear()
            written.append(chat_id)
            entries.append({"id": chat_id, "path": name, "title": summary.title})
        projects = projects_document(chats, written)
        zip_file.writestr(PROJECTS_NAME, json.dumps(projects, ensure_ascii=False))
        manifest = {
            "format": ZIP_EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "exported_at": now_ms(),
            "directory_id": chats.directory_id,
            "chats": entries,
            "shared_with_me": [dict(entry) for entry in shared_with_me],
            "projects": PROJECTS_NAME,
        }
        zip_file.writestr(MANIFEST_NAME, json.dumps(manifest, ensure_ascii=False, indent=1))
    return written


def _text(raw: IO[bytes]) -> io.TextIOWrapper:
    return io.TextIOWrapper(raw, encoding="utf-8")


def all_chat_ids(chats: Chats, page: int = 500) -> list[str]:
    """Every live chat id, archived or not, newest first (paged through ``list_chats``)."""
    found: list[ChatSummary] = []
    for archived in (False, True):
        before = None
        while True:
            rows = chats.list_chats(limit=page, before=before, archived=archived)
            found.extend(rows)
            if len(rows) < page:
                break
            before = rows[-1].cursor
    found.sort(key=lambda summary: summary.cursor, reverse=True)
    return [summary.id for summary in found]
