"""This project's own export (``docs/export-format.md``): one chat document, or the ``.zip``.

Read back losslessly: every row with its parent and time in the exported order, compactions
with their ids, the conversation record and session state, title and times. Attachment
pointers are resolved from the document's ``attachments`` (inline base64) or the archive's
``attachments/<hash>`` files, and the store lifts them out again under the same hash. A chat
imported from an export is keyed by the chat's ``source`` if it has one (so an imported
ChatGPT conversation stays one chat however it travels), else by ``chats`` + its exported id.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

from backend.chats import SourceKey
from backend.portability.document import (
    CHAT_FORMAT,
    EXPORT_VERSION,
    MANIFEST_NAME,
    NATIVE_SOURCE,
    ZIP_EXPORT_FORMAT,
    ImportedConversation,
    ImportedMessage,
    Refused,
    StateDocument,
    fit_title,
)
from backend.portability.formats.reading import records
from backend.portability.import_source import ImportSource
from backend.portability.project_document import PROJECTS_NAME, ImportedProject, imported_projects
from backend.runtime import Conversation
from backend.sessions import StoredCompaction, find_pointers, resolve_attachments

NAME = NATIVE_SOURCE

Loader = Callable[[set[str]], dict[str, tuple[bytes, str]]]


def looks_like(record: dict[str, Any] | None) -> bool:
    return isinstance(record, dict) and record.get("format") in (CHAT_FORMAT, ZIP_EXPORT_FORMAT)


def conversations(
    source: ImportSource,
) -> Iterator[ImportedConversation | ImportedProject | Refused]:
    """Each chat of the file, read as a stream (one chat document in memory at a time), then
    the projects of a ``.zip`` (``projects.json``)."""
    if source.zip is None:
        document = _load(source, None, source.path.name)
        if isinstance(document, Refused):
            yield document
            return
        yield _convert_or_refuse(document, source.path.name, None)
        return
    if not source.has(MANIFEST_NAME):
        yield Refused(MANIFEST_NAME, "missing from the archive")
        return
    manifest = _load(source, MANIFEST_NAME, MANIFEST_NAME)
    if isinstance(manifest, Refused):
        yield manifest
        return
    _check_version(manifest)
    keys: dict[str, SourceKey] = {}  # exported chat id -> the key its chat imports under
    for entry in manifest.get("chats") or []:
        member = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(member, str):
            yield Refused(f"{MANIFEST_NAME} entry {entry!r}", "names no chat file")
            continue
        if not source.has(member):
            yield Refused(member, "listed in the manifest but missing from the archive")
            continue
        document = _load(source, member, member)
        if isinstance(document, Refused):
            yield document
            continue
        item = _convert_or_refuse(document, member, source)
        if isinstance(item, ImportedConversation) and isinstance(entry.get("id"), str):
            keys[entry["id"]] = item.source
        yield item
    yield from _projects(source, manifest, keys)


def _projects(
    source: ImportSource, manifest: dict[str, Any], keys: dict[str, SourceKey]
) -> Iterator[ImportedProject | Refused]:
    """The zip's projects (after its chats, whose keys they name); none in older exports."""
    member = manifest.get("projects")
    if member is None:
        return
    if member != PROJECTS_NAME or not source.has(member):
        yield Refused(f"{MANIFEST_NAME} projects {member!r}", "missing from the archive")
        return
    document = _load(source, member, member)
    if isinstance(document, Refused):
        yield document
        return
    yield from imported_projects(document, keys)


def _load(source: ImportSource, member: str | None, name: str) -> dict[str, Any] | Refused:
    """The one JSON object ``member`` holds, streamed through the import limits."""
    with source.open(member) as stream:
        for document in records(stream, name):
            if isinstance(document, (Refused, dict)):
                return document
            return Refused(name, "not a JSON object")
    return Refused(name, "empty")


def _check_version(document: dict[str, Any]) -> None:
    version = document.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        raise ValueError(f"export format version {version!r}; this version reads up to 1")


def _convert_or_refuse(
    document: dict[str, Any], name: str, source: ImportSource | None
) -> ImportedConversation | Refused:
    try:
        return convert(document, source)
    except Exception as exc:
        return Refused(name, f"unreadable: {exc!r}")


def convert(document: dict[str, Any], source: ImportSource | None = None) -> ImportedConversation:
    if document.get("format") != CHAT_FORMAT:
        raise ValueError(f"not a chat document (format {document.get('format')!r})")
    _check_version(document)
    chat = document["chat"]
    origin = document.get("source")
    if isinstance(origin, dict):
        key = SourceKey(str(origin["format"]), str(origin["id"]))
    else:
        key = SourceKey(NATIVE_SOURCE, str(chat["id"]))
    load = _loader(document.get("attachments") or {}, source)
    messages = []
    for row in document.get("messages") or []:
        message = row["message"]
        hashes = find_pointers(json.dumps(message))
        if hashes:
            message = resolve_attachments(message, hashes, load)
        messages.append(ImportedMessage(message, row.get("parent_id"), int(row["created_at"])))
    compactions = [
        StoredCompaction(
            str(c["id"]),
            str(c["summary"]),
            str(c["from_message_id"]),
            str(c["to_message_id"]),
            int(c["created_at"]),
        )
        for c in document.get("compactions") or []
    ]
    record = document.get("conversation")
    state = document.get("session_state")
    return ImportedConversation(
        source=key,
        title=fit_title(chat.get("title")),
        created_at=int(chat["created_at"]),
        updated_at=int(chat["updated_at"]),
        messages=messages,
        compactions=compactions,
        record=None
        if record is None
        else Conversation(**(record | {"participant_ids": tuple(record["participant_ids"])})),
        state=None
        if state is None
        else StateDocument(dict(state["data"]), int(state["updated_at"])),
        preview_text=chat.get("last_message_preview") or "",  # "": none, as exported
        archived_at=_archived_at(chat, record),
        pinned_at=None if chat.get("pinned_at") is None else int(chat["pinned_at"]),
    )


def _archived_at(chat: dict[str, Any], record: dict[str, Any] | None) -> int | None:
    """The chat row's (the directory keeps archive); older exports had it in the record only."""
    value = chat.get("archived_at")
    if value is None and record is not None:
        value = record.get("archived_at")
    return None if value is None else int(value)


def _loader(listing: dict[str, Any], source: ImportSource | None) -> Loader:
    def load(hashes: set[str]) -> dict[str, tuple[bytes, str]]:
        found: dict[str, tuple[bytes, str]] = {}
        for digest in hashes:
            entry = listing.get(digest)
            if not isinstance(entry, dict):
                continue
            media_type = str(entry.get("media_type") or "application/octet-stream")
            if isinstance(entry.get("data"), str):
                found[digest] = (base64.b64decode(entry["data"]), media_type)
            elif source is not None and isinstance(entry.get("path"), str):
                data = source.read_member(entry["path"])
                if data is not None:
                    found[digest] = (data, media_type)
        return found

    return load
