"""The live view of the active chat, shared by every tab that has it open.

Each tab looks at a branch of its own (SPEC; RFC edge case 14). The shared view holds the
newest path (``entries``, where a reply streams) and, for the branches tabs chose that are off
it, their windows (``branches``); which one a tab shows is :meth:`SharedConversationState.
rows_for` its chosen leaf, computed in the browser by :func:`shown_rows` from vars it already
has, so a tab's choice costs no frame of its own and the bridge needs no per-tab hook. Which
branch moves along with a new message is ``backend.transcript.follow_branches``'s rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import reflex as rx

from backend.messages import WrittenMessage
from backend.transcript import TranscriptWindow, extended_window, followed_along, updated_window
from chatsapp.live.stream_pieces import PIECE_LEVELS, PIECE_VAR, append
from chatsapp.services import offload, services
from chatsapp.states.rows import EntryRow
from chatsapp.states.server_only import server_only
from chatsapp.states.window_fields import read_views, view_fields

# Branches followed per chat (the leaves tabs chose, newest choices kept): bounds the windows
# each refresh reads and ships; a tab whose choice was dropped follows the newest path.
MAX_FOLLOWED_BRANCHES = 16


class SharedConversationState(rx.SharedState):
    """Shared by every tab showing one chat (linked to ``conv-<chat id>``): its live view.

    The in-progress reply lives in the ``streaming_piece_<k>`` vars alone: a delta re-sends the
    whole value of each changed var, so streaming never re-sends ``entries`` (its cost per
    token does not depend on how long the transcript is), and a flush re-sends the newest
    piece, not the whole reply (nor on how long the reply is: ``chatsapp.live.stream_pieces``).
    """

    chat_id: str = ""
    title: str = ""
    expires_iso: str = ""  # a temporary chat's latest end (ISO 8601); "" for any other chat
    entries: list[EntryRow] = []  # the newest path
    has_earlier: bool = False
    newest_id: str = ""  # the newest message (the last of ``entries``)
    leaf_of: dict[str, str] = {}  # leaf a tab chose -> the leaf its branch shows now
    branches: dict[str, list[EntryRow]] = {}  # shown leaf -> its window, off the newest path
    # Messages on each shown path, root to leaf (the header's count): the newest path's, and
    # each branch window's by its shown leaf.
    message_count: int = 0
    branch_counts: dict[str, int] = {}
    for _level in range(PIECE_LEVELS):
        __annotations__[f"{PIECE_VAR}{_level}"] = "str"
        locals()[f"{PIECE_VAR}{_level}"] = ""
    del _level
    streaming_message_id: str = ""
    streaming: bool = False
    queued: int = 0
    error: str = ""
    deleted: bool = False
    loaded: bool = False

    # The newest path as last shown, kept on the server so a message a run just wrote is shown
    # from its event (``show_written``) instead of by reading the window again.
    _window: TranscriptWindow | None = None

    @server_only
    async def refresh(self, user_id: str) -> None:
        """Re-read the newest path and move each followed branch along (reading a chat never
        written creates no file: it reads as empty)."""
        chats = services().directory(user_id)
        chat = await offload(chats.get_chat, self.chat_id)
        window, views = await offload(read_views, chat.reader, dict(self.leaf_of))
        self._show(window, views.leaf_of, views.windows)

    @server_only
    def show_written(self, written: Sequence[WrittenMessage], *, in_place: bool = False) -> bool:
        """Show messages a run just stored without reading: appended below the newest leaf
        (``run.queued``), or, ``in_place``, a shown reply rewritten (``run.completed``). False
        when only a read can tell (written on another branch, a shown branch holds it, the
        window is not known, an append of a message already shown: a replayed event): the
        caller refreshes then."""
        before = self._window
        if before is None or not written:
            return False
        if any(w.id in {e.id for e in rows} for w in written for rows in self.branches.values()):
            return False
        if in_place:
            after = updated_window(before, written[0]) if len(written) == 1 else None
            leaf_of = self.leaf_of
        else:
            after = extended_window(before, written)
            leaf_of = followed_along(self.leaf_of, before, after) if after else {}
        if after is None:
            return False
        self._show(after, leaf_of, None)
        return True

    def _show(
        self,
        window: TranscriptWindow,
        leaf_of: dict[str, str],
        branch_windows: dict[str, TranscriptWindow] | None,
    ) -> None:
        """Show ``window`` as the newest path (and, unless None, these branch windows).

        Each assignment is a frame to every tab of the chat: only what changed is assigned
        (a tab choosing a branch re-reads, and must not re-send the newest path to all).
        """
        self._window = window
        for name, value in view_fields(window, leaf_of, branch_windows).items():
            if getattr(self, name) != value:
                setattr(self, name, value)

    @server_only
    def append_streamed(self, text: str) -> None:
        """Add ``text`` to the streaming reply; only the pieces that change are sent."""
        for level, piece in append(self.streamed_pieces(), text).items():
            setattr(self, f"{PIECE_VAR}{level}", piece)

    @server_only
    def show_newest_piece(self, text: str) -> None:
        """Hold ``text`` as the reply's newest piece (level 0), as frames sent it to the tabs
        (``chatsapp.live.text_frames``); assigned even when unchanged, so it is sent again."""
        setattr(self, f"{PIECE_VAR}0", text)

    @server_only
    def clear_streamed(self) -> None:
        """No streaming text (only pieces holding some are assigned: each is a frame)."""
        for level, piece in enumerate(self.streamed_pieces()):
            if piece:
                setattr(self, f"{PIECE_VAR}{level}", "")

    @server_only
    def streamed_pieces(self) -> list[str]:
        return [getattr(self, f"{PIECE_VAR}{level}") for level in range(PIECE_LEVELS)]

    @server_only
    def follow(self, leaf: str) -> None:
        """A tab chose the branch ending at ``leaf``: keep it moving along with new messages."""
        followed = {k: v for k, v in self.leaf_of.items() if k != leaf}
        followed[leaf] = self.leaf_of.get(leaf, leaf)
        followed = dict(list(followed.items())[-MAX_FOLLOWED_BRANCHES:])
        if followed != self.leaf_of:
            self.leaf_of = followed

    @server_only
    def rows_for(self, chosen: str) -> list[EntryRow]:
        """The rows a tab that chose ``chosen`` shows (:func:`shown_rows` is its browser twin)."""
        return self.branches.get(self.leaf_of.get(chosen, chosen), self.entries)

    @server_only
    def on_branch(self, chosen: str) -> bool:
        """Whether that tab shows a branch off the newest path."""
        return self.leaf_of.get(chosen, chosen) in self.branches
