"""Render-ready windows of one conversation, for any front end (the Reflex UI is one).

A client never receives a whole transcript: it gets the newest messages that fit a byte
budget (``Session.get_recent_history``), and asks for earlier ones page by page through a
newest-first read that stops as soon as the page is full. Each entry carries what a chat view
needs and nothing more: plain text for markdown, image URLs, tool calls, the run status a reply
was left in, and its position among its siblings ("‹ 2/3 ›") so branches are navigable. Text is
well-formed Unicode (``backend.storage.text``): a front end sends it on as UTF-8, which cannot
carry the lone surrogate a stored message may hold.

Branch rule: a sibling of entry *i* is another child of entry *i-1* (the previous entry on the
path is its parent). Choosing a sibling shows the newest leaf below it (the most recently
written descendant), which is where the user last was on that branch.

Each viewer (a browser tab) looks at a branch of its own (:func:`follow_branches`): a new
message below the leaf it shows moves it along (a reply in its branch), a new message anywhere
else (a regenerate, an edit, a send from a viewer on another branch) leaves it where it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from backend.errors import NotFoundError
from backend.messages import Author, Message, WrittenMessage
from backend.models import ReplyUsage
from backend.sessions import is_compaction_message, is_tool_part, tool_name
from backend.storage import well_formed_text
from backend.uploads import data_url_size

DEFAULT_WINDOW_BYTES = 256 * 1024
DEFAULT_WINDOW_MESSAGES = 60  # a page of small messages must not ship a thousand rows
EARLIER_PAGE_SIZE = 20
_MAX_DESCENT = 10_000
MAX_NAMED_ID_CHARS = 80  # how much of an unknown id its error repeats (a client may send 1 MB)
_SHOWN_STATUSES = frozenset({"queued", "running", "cancelled", "failed"})


class SessionReader(Protocol):
    """The read side of ``backend.sessions.Session`` this module needs."""

    def get_recent_history(self, max_content_bytes: int, *, leaf_id: str | None = None) -> Any: ...
    def history(
        self, *, leaf_id: str | None = None, newest_first: bool = False
    ) -> Iterable[dict]: ...
    def get_branches(self, message_id: str | None) -> list[dict]: ...
    def get_message(self, message_id: str) -> dict | None: ...
    def get_latest_leaf(self) -> dict | None: ...
    def get_history_row_stats(self, leaf_id: str | None = None) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class ToolCallView:
    name: str
    input: str
    output: str


@dataclass(frozen=True, slots=True)
class FileView:
    """A document attached to a message: a chip with its name and size, downloadable."""

    name: str
    media_type: str
    size: int
    url: str  # the stored bytes as a data: URL ("" when the payload is missing)


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    id: str
    role: str
    text: str
    images: tuple[str, ...] = ()
    tool_calls: tuple[ToolCallView, ...] = ()
    # "" (done), "queued" / "running" (a reply still being written), "cancelled", "failed"
    status: str = ""
    is_summary: bool = False
    sibling_index: int = 1
    sibling_count: int = 1
    prev_sibling_id: str = ""
    next_sibling_id: str = ""
    sent_at: int = 0  # ms since the epoch the message was stored; 0 when unknown (an overlay)
    files: tuple[FileView, ...] = ()
    # Which model wrote an assistant reply (``metadata.model`` / ``metadata.endpoint``).
    # Why a failed reply stopped (the runtime's sentence: a model error, or the server stopping).
    error: str = ""
    model: str = ""
    endpoint: str = ""
    usage: ReplyUsage | None = None  # an assistant reply's tokens (``metadata.usage``)
    stored_bytes: int = 0  # what the window's byte budget charges for it (0 when unknown)
    # Who sent a user message (``metadata.author``), and who asked for an assistant reply
    # (``metadata.requestedBy``: the reply itself is the model's): an account id and the name
    # shown. "" when not recorded (a message written before authors were, or imported).
    author_id: str = ""
    author_name: str = ""
    requested_by_id: str = ""
    requested_by_name: str = ""


@dataclass(frozen=True, slots=True)
class TranscriptWindow:
    entries: tuple[TranscriptEntry, ...]
    has_earlier: bool
    leaf_id: str | None
    total_bytes: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    message_count: int = 0  # stored messages on the shown path, root to leaf (not just shown)


def load_window(
    session: SessionReader,
    *,
    leaf_id: str | None = None,
    byte_budget: int = DEFAULT_WINDOW_BYTES,
    max_messages: int = DEFAULT_WINDOW_MESSAGES,
) -> TranscriptWindow:
    """The newest messages on the path ending at ``leaf_id`` (default: the active leaf),
    bounded both by stored bytes and by count."""
    recent = session.get_recent_history(byte_budget, leaf_id=leaf_id)
    messages: list[dict] = list(recent.messages)
    truncated = bool(recent.truncated) or len(messages) > max_messages
    messages = messages[-max_messages:]
    resolved_leaf = messages[-1]["id"] if messages else None
    entries = _with_siblings(session, messages, starts_at_root=not truncated)
    rows = _path_rows(session, resolved_leaf)
    return TranscriptWindow(
        entries=tuple(_with_send_times(entries, rows)),
        has_earlier=truncated,
        leaf_id=resolved_leaf,
        total_bytes=int(recent.total_content_bytes),
        message_count=len(rows),
    )


@dataclass(frozen=True, slots=True)
class BranchViews:
    """Where each followed branch stands after the newest message (see :func:`follow_branches`)."""

    leaf_of: dict[str, str]  # the leaf a viewer chose -> the leaf it shows now
    windows: dict[str, TranscriptWindow]  # by shown leaf, for those off the newest path


def follow_branches(
    session: SessionReader, newest: TranscriptWindow, followed: Mapping[str, str]
) -> BranchViews:
    """Move each followed branch along: ``followed`` maps the leaf a viewer chose to the leaf
    it showed until now, ``newest`` is the window of the newest message.

    A shown leaf the newest message descends from (a reply in that branch) becomes the newest
    leaf; any other keeps its branch, at the newest leaf below it (a message written there
    meanwhile). "" (a chat that was empty) follows the newest. Branches off the newest path get
    their own window; a leaf that no longer resolves to a message follows the newest.
    """
    newest_id = newest.leaf_id or ""
    on_newest_path = {entry.id for entry in newest.entries}
    leaf_of: dict[str, str] = {}
    windows: dict[str, TranscriptWindow] = {}
    for chosen, shown in followed.items():
        leaf = newest_id if not shown or shown in on_newest_path else shown
        if leaf != newest_id:
            leaf = newest_leaf_below(session, leaf)
        if leaf != newest_id and leaf not in windows:
            window = load_window(session, leaf_id=leaf)
            if window.leaf_id != leaf:  # gone (deleted or compacted away): follow the newest
                leaf = newest_id
            else:
                windows[leaf] = window
        leaf_of[chosen] = leaf
    return BranchViews(leaf_of, windows)


def extended_window(
    window: TranscriptWindow,
    written: Sequence[WrittenMessage],
    *,
    byte_budget: int = DEFAULT_WINDOW_BYTES,
    max_messages: int = DEFAULT_WINDOW_MESSAGES,
) -> TranscriptWindow | None:
    """``window`` after ``written`` (each the child of the one before) was stored below its
    leaf: what :func:`load_window` would read now, computed without a read. None when only a
    read can tell (written elsewhere on the tree, a compaction summary shown, a size unknown).

    Trimming to the budget from the new leaf backwards stays inside the old window: a longer
    path only ever starts its window later, so the rows before it are never needed.
    """
    parent = window.leaf_id
    for message in written:
        if message.parent_id != parent:
            return None
        parent = message.id
    added = [_written_entry(message) for message in written]
    if not added or any(entry is None for entry in added):
        return None
    entries = [*window.entries, *(entry for entry in added if entry is not None)]
    trimmed = _within_budget(window, entries, byte_budget, max_messages)
    if trimmed is None:
        return None
    return replace(
        trimmed,
        leaf_id=entries[-1].id,
        message_count=window.message_count + len(added),
        total_bytes=window.total_bytes + sum(entry.stored_bytes for entry in added if entry),
    )


def updated_window(
    window: TranscriptWindow,
    written: WrittenMessage,
    *,
    byte_budget: int = DEFAULT_WINDOW_BYTES,
    max_messages: int = DEFAULT_WINDOW_MESSAGES,
) -> TranscriptWindow | None:
    """``window`` after a message it shows was rewritten in place (a reply finished): its
    place among siblings and its send time stay; None when only a read can tell."""
    index = next((i for i, e in enumerate(window.entries) if e.id == written.id), None)
    entry = _written_entry(written)
    if index is None or entry is None:
        return None
    old = window.entries[index]
    entry = replace(
        entry,
        sibling_index=old.sibling_index,
        sibling_count=old.sibling_count,
        prev_sibling_id=old.prev_sibling_id,
        next_sibling_id=old.next_sibling_id,
        sent_at=old.sent_at,
    )
    entries = [*window.entries[:index], entry, *window.entries[index + 1 :]]
    trimmed = _within_budget(window, entries, byte_budget, max_messages)
    if trimmed is None:
        return None
    growth = entry.stored_bytes - old.stored_bytes
    return replace(trimmed, total_bytes=window.total_bytes + growth)


def followed_along(
    followed: Mapping[str, str], before: TranscriptWindow, after: TranscriptWindow
) -> dict[str, str]:
    """:func:`follow_branches` for messages written below the newest leaf: a branch shown on
    the newest path moves to the new leaf, every other stays where it is (nothing below it
    changed)."""
    on_path = {entry.id for entry in before.entries} | {before.leaf_id or ""}
    newest = after.leaf_id or ""
    return {chosen: newest if shown in on_path else shown for chosen, shown in followed.items()}


def _written_entry(written: WrittenMessage) -> TranscriptEntry | None:
    if written.stored_bytes is None:
        return None
    entry = entry_from_message(written.message.as_stored())
    return replace(entry, sent_at=written.sent_at, stored_bytes=written.stored_bytes)


def _within_budget(
    window: TranscriptWindow,
    entries: list[TranscriptEntry],
    byte_budget: int,
    max_messages: int,
) -> TranscriptWindow | None:
    """The longest suffix of ``entries`` within both bounds (always the leaf), as
    ``load_window`` cuts it; its first entry loses its siblings once the window no longer
    starts at the root (``_with_siblings``)."""
    if any(entry.is_summary for entry in entries):
        return None  # a summary stands for rows the window does not hold
    start = len(entries) - 1
    used = entries[start].stored_bytes
    while start > 0 and used + entries[start - 1].stored_bytes <= byte_budget:
        start -= 1
        used += entries[start].stored_bytes
    start = max(start, len(entries) - max_messages)
    kept = entries[start:]
    has_earlier = window.has_earlier or start > 0
    if start > 0:
        kept[0] = replace(
            kept[0], sibling_index=1, sibling_count=1, prev_sibling_id="", next_sibling_id=""
        )
    return replace(window, entries=tuple(kept), has_earlier=has_earlier)


def load_earlier(
    session: SessionReader, *, leaf_id: str, before_id: str, count: int = EARLIER_PAGE_SIZE
) -> tuple[list[TranscriptEntry], bool]:
    """Up to ``count`` entries just before ``before_id`` on the path of ``leaf_id``.

    Reads newest-first from the leaf and stops once the page is full (plus one row to know
    whether anything earlier remains), so the cost does not grow with the transcript.
    """
    page: list[dict] = []
    seen_anchor = False
    has_more = False
    for message in session.history(leaf_id=leaf_id, newest_first=True):
        if not seen_anchor:
            seen_anchor = message.get("id") == before_id
            continue
        if len(page) == count:
            has_more = True
            break
        page.append(message)
    page.reverse()
    entries = _with_siblings(session, page)
    return _with_send_times(entries, _path_rows(session, leaf_id) if page else []), has_more


def chosen_leaf(session: SessionReader, message_id: object) -> str:
    """The leaf a viewer who picked the version ``message_id`` is shown (the newest below it).

    The id comes from a client: one that names no message of this chat (another chat's, made
    up, not text) is a ``NotFoundError``, and is never followed or shown.
    """
    if not isinstance(message_id, str) or session.get_message(message_id) is None:
        raise NotFoundError("message", str(message_id)[:MAX_NAMED_ID_CHARS])
    return newest_leaf_below(session, message_id)


def newest_leaf_below(session: SessionReader, message_id: str) -> str:
    """The most recently written leaf in the subtree of ``message_id``."""
    current = message_id
    for _ in range(_MAX_DESCENT):
        children = session.get_branches(current)
        if not children:
            return current
        current = children[-1]["id"]
    return current


def entry_from_message(message: dict) -> TranscriptEntry:
    """Project one stored message onto what a chat view renders."""
    texts: list[str] = []
    images: list[str] = []
    files: list[FileView] = []
    tools: list[ToolCallView] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = str(part.get("type", ""))
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "file" and str(part.get("mediaType", "")).startswith("image/"):
            url = part.get("url")
            if isinstance(url, str):
                images.append(url)
        elif kind == "file":
            files.append(_file_view(part))
        elif is_tool_part(kind):
            tools.append(
                ToolCallView(
                    name=tool_name(part),
                    input=_short_json(part.get("input")),
                    output=_short_json(part.get("output")),
                )
            )
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    status = str(metadata.get("status", "")) if metadata else ""
    message_id = str(message.get("id", ""))
    typed = Message.from_stored(message)
    author = typed.author if typed.role == "user" else None
    requester = typed.requested_by if typed.role == "assistant" else None
    return TranscriptEntry(
        id=message_id,
        role=str(message.get("role", "")),
        text=well_formed_text("\n\n".join(texts)),
        images=tuple(images),
        files=tuple(files),
        tool_calls=tuple(tools),
        status=status if status in _SHOWN_STATUSES else "",
        is_summary=is_compaction_message(message),
        error=well_formed_text(str(metadata.get("error") or ""))[:300] if metadata else "",
        model=str(metadata.get("model") or "") if metadata else "",
        endpoint=str(metadata.get("endpoint") or "") if metadata else "",
        usage=ReplyUsage.from_metadata(metadata),
        author_id=author.id if author else "",
        author_name=_shown_name(author),
        requested_by_id=requester.id if requester else "",
        requested_by_name=_shown_name(requester),
    )


def _shown_name(person: Author | None) -> str:
    return well_formed_text(person.name) if person else ""


def _with_siblings(
    session: SessionReader, messages: list[dict], *, starts_at_root: bool = False
) -> list[TranscriptEntry]:
    """Place each entry among its siblings. The first entry's parent is known only when the
    window starts at the root (its siblings are the other roots, e.g. an edited first message)."""
    entries: list[TranscriptEntry] = []
    for index, message in enumerate(messages):
        entry = entry_from_message(message)
        if not entry.is_summary:
            if index > 0:
                entry = _placed_among_siblings(
                    entry, session.get_branches(messages[index - 1]["id"])
                )
            elif starts_at_root:
                entry = _placed_among_siblings(entry, session.get_branches(None))
        entries.append(entry)
    return entries


def _file_view(part: dict) -> FileView:
    url = part.get("url")
    url = url if isinstance(url, str) and url.startswith("data:") else ""
    return FileView(
        name=well_formed_text(str(part.get("filename") or "file")),
        media_type=str(part.get("mediaType", "")),
        size=data_url_size(url) if url else 0,
        url=url,
    )


def _path_rows(session: SessionReader, leaf_id: str | None) -> list[Any]:
    """The stored rows of the path ending at ``leaf_id``, read without their content."""
    return [] if leaf_id is None else list(session.get_history_row_stats(leaf_id))


def _with_send_times(entries: list[TranscriptEntry], rows: list[Any]) -> list[TranscriptEntry]:
    """Stamp each entry with its row's stored time and size."""
    if not entries:
        return entries
    facts = {str(row.id): (int(row.created_at), int(row.bytes)) for row in rows}
    return [
        replace(entry, sent_at=sent_at, stored_bytes=size)
        for entry in entries
        for sent_at, size in (facts.get(entry.id, (0, 0)),)
    ]


def _placed_among_siblings(entry: TranscriptEntry, siblings: list[dict]) -> TranscriptEntry:
    ids = [str(s.get("id")) for s in siblings]
    if entry.id not in ids or len(ids) < 2:
        return entry
    position = ids.index(entry.id)
    return replace(
        entry,
        sibling_index=position + 1,
        sibling_count=len(ids),
        prev_sibling_id=ids[position - 1] if position > 0 else "",
        next_sibling_id=ids[position + 1] if position + 1 < len(ids) else "",
    )


def _short_json(value: object, limit: int = 400) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = well_formed_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
