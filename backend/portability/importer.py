"""Writing imported conversations into a directory: atomic per chat, de-duplicated, streamed.

``import_file(chats, path)`` detects the format, then for each conversation the format
yields (one at a time: memory is one conversation, whatever the file's size):

1. ``chats.imports.begin`` finds or creates its chat, keyed by the source (format + source
   conversation id). Unchanged since the last import (same digest): nothing is written.
2. One transaction on the chat's file writes every message with ``import_message`` (explicit
   parent and time, existing ids skipped), the compactions and, for this project's exports,
   the conversation record and session state. A failure rolls the chat's file back; a chat
   made for it is deleted again, and the conversation is reported failed.
3. ``chats.imports.finish`` marks the source complete.

**Re-import is an update**: a conversation with new messages since the last import gets
them added to the same chat (ids are the source's, so existing ones are skipped); the chat's
time and preview move to the source's. Nothing is ever removed by a re-import.

A conversation that cannot be read or written is reported (``ImportReport.failures``) and
skipped; the others import.

A zip of this app also carries the person's projects, after its chats: each is written by
``Projects.transfer`` (idempotent too: known by its id, nothing removed), its chats mapped
from the keys their conversations imported under to this directory's chat ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

from backend.chats import Chats, SourceKey
from backend.clock import now_ms
from backend.portability.detect import ImportFormat, detect
from backend.portability.document import ImportedConversation, Refused
from backend.portability.import_source import ImportSource
from backend.portability.limits import ImportLimits
from backend.portability.project_document import ImportedProject
from backend.portability.report import Failure, ImportReport
from backend.projects import Projects
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.state_schema import check_state

MAX_FAILURES = 1000
ProgressCallback = Callable[[int, int], None]
"""``progress(bytes_read, total_bytes)`` after each conversation."""


def import_file(
    chats: Chats,
    path: str | Path,
    *,
    progress: ProgressCallback | None = None,
    limits: ImportLimits | None = None,
) -> ImportReport:
    with ImportSource(path, limits) as source:
        found = detect(source)
        return import_from(chats, source, found, progress=progress)


def import_from(
    chats: Chats,
    source: ImportSource,
    found: ImportFormat,
    *,
    progress: ProgressCallback | None = None,
) -> ImportReport:
    report = ImportReport(format=found.NAME)
    positioned = ((item, source.position()) for item in found.conversations(source))
    write_all(chats, positioned, report, total=source.size, progress=progress)
    return report


ImportItem = ImportedConversation | ImportedProject | Refused


def write_all(
    chats: Chats,
    items: Iterable[tuple[ImportItem, int]],
    report: ImportReport,
    *,
    total: int,
    progress: ProgressCallback | None = None,
) -> None:
    """Write each conversation (with how far into the file it was read), report each refusal.

    Past ``MAX_FAILURES`` refusals the rest of the file is not read: a file of millions of
    unreadable records would otherwise make a report of millions of lines.
    """
    imported: dict[SourceKey, str] = {}  # the chat each conversation of the file went to
    for item, position in items:
        if isinstance(item, ImportedProject):
            write_project(chats, item, imported, report)
        elif isinstance(item, Refused):
            report.failures.append(Failure(item.item, item.reason))
            if len(report.failures) >= MAX_FAILURES:
                reason = f"over {MAX_FAILURES} conversations could not be read; stopped there"
                report.failures.append(Failure("the rest of the file", reason))
                return
        else:
            try:
                imported[item.source] = write_conversation(chats, item, report)
            except Exception as exc:  # reported, and the next conversation imports
                name = f"{item.source.format} conversation {item.source.source_id} {item.title!r}"
                report.failures.append(Failure(name, f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(position, total)


def write_project(
    chats: Chats, item: ImportedProject, imported: dict[SourceKey, str], report: ImportReport
) -> None:
    """Write one project; its chats are those of the file that imported (failed ones left out)."""
    chat_ids = tuple(imported[key] for key in item.chats if key in imported)
    snapshot = dataclasses.replace(item.snapshot, chat_ids=chat_ids)
    try:
        outcome = Projects(chats).transfer.restore(snapshot, now_ms=now_ms())
    except Exception as exc:  # reported, and the next project imports
        report.failures.append(Failure(item.label, f"{type(exc).__name__}: {exc}"))
        return
    report.projects[outcome] += 1


def write_conversation(
    chats: Chats, conversation: ImportedConversation, report: ImportReport
) -> str:
    """Write one conversation; the id of the chat it went to."""
    digest = conversation.digest()
    preview = conversation.preview()
    target = chats.imports.begin(
        conversation.source,
        digest,
        title=conversation.title,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        preview=preview,
        archived_at=conversation.archived_at,
    )
    if target.status == "unchanged":
        report.unchanged += 1
        return target.chat.id
    if target.status == "new" and conversation.pinned_at is not None:
        chats.pins.pin(target.chat.id, at=conversation.pinned_at)
    encoded_state = None
    if conversation.state is not None:
        encoded_state = check_state(conversation.state.data, None)
    chat = chats.get_chat(target.chat.id)
    try:
        session = chat.session
        with chat.database.transaction():
            before = chat.database.stats.rows_written
            for entry in conversation.messages:
                session.import_message(
                    entry.message, parent_id=entry.parent_id, created_at=entry.created_at
                )
            for compaction in conversation.compactions:
                session.import_compaction(compaction)
            if conversation.record is not None:
                record = dataclasses.replace(conversation.record, id=target.chat.id)
                updated_at = conversation.state.updated_at if conversation.state else 0
                runtime_store_for(chat.database).import_record(record, encoded_state, updated_at)
            wrote = chat.database.stats.rows_written != before
    except BaseException:
        if target.status == "new":
            chats.delete_chat(target.chat.id)
        raise
    chats.imports.finish(
        conversation.source, target, updated_at=conversation.updated_at, preview=preview
    )
    report.chat_ids.append(target.chat.id)
    report.messages += len(conversation.messages)
    if target.status == "update" and wrote:
        report.updated += 1
    elif target.status == "update":
        report.unchanged += 1
    else:
        report.imported += 1
    return target.chat.id
