"""A chat's transcript windows as the fields of its shared conversation view.

One place turns what ``backend.transcript`` computed (read, or advanced from a run event) into
the values ``SharedConversationState`` holds, so both ways of updating the view agree.
"""

from __future__ import annotations

from backend.transcript import (
    BranchViews,
    SessionReader,
    TranscriptWindow,
    follow_branches,
    load_window,
)
from chatsapp.states.rows import entry_row


def read_views(
    reader: SessionReader, followed: dict[str, str]
) -> tuple[TranscriptWindow, BranchViews]:
    """The newest path's window and each followed branch, read (one worker-thread call)."""
    window = load_window(reader)
    return window, follow_branches(reader, window, followed)


def view_fields(
    window: TranscriptWindow,
    leaf_of: dict[str, str],
    branch_windows: dict[str, TranscriptWindow] | None,
) -> dict[str, object]:
    """The view's fields by name: the newest path, where each chosen branch stands and,
    unless None (unchanged), the windows of the branches off the newest path."""
    fields: dict[str, object] = {
        "entries": [entry_row(e) for e in window.entries],
        "has_earlier": window.has_earlier,
        "message_count": window.message_count,
        "newest_id": window.leaf_id or "",
        "leaf_of": leaf_of,
        "loaded": True,
    }
    if branch_windows is not None:
        fields["branches"] = {
            leaf: [entry_row(e) for e in rows.entries] for leaf, rows in branch_windows.items()
        }
        fields["branch_counts"] = {
            leaf: rows.message_count for leaf, rows in branch_windows.items()
        }
    return fields
