"""Browser-side views of the shared conversation: what a tab shows, computed from vars it holds.

Each tab chose a branch (``ChatTabState.view_leaf_id``); these build, in the browser, the rows,
count and streaming text that tab shows from the shared view's vars, so a tab's choice costs no
frame of its own (``chatsapp.states.conversation`` explains the shared view).
"""

from __future__ import annotations

import functools
import operator

import reflex as rx

from chatsapp.live.stream_pieces import PIECE_LEVELS, PIECE_VAR
from chatsapp.states.rows import EntryRow
from chatsapp.states.shared_conversation import SharedConversationState


def _shown_leaf(chosen: rx.Var[str]) -> rx.Var[str]:
    leaf_of = SharedConversationState.leaf_of
    return rx.cond(leaf_of.contains(chosen), leaf_of[chosen], chosen).to(str)


def shown_rows(chosen: rx.Var[str]) -> rx.Var[list[EntryRow]]:
    """In the browser: the rows of the branch a tab chose (the twin of ``rows_for``)."""
    shown, branches = _shown_leaf(chosen), SharedConversationState.branches
    return rx.cond(branches.contains(shown), branches[shown], SharedConversationState.entries).to(
        list[EntryRow]
    )


def shown_message_count(chosen: rx.Var[str]) -> rx.Var[int]:
    """In the browser: the message count of the branch a tab chose (for its header)."""
    shown, counts = _shown_leaf(chosen), SharedConversationState.branch_counts
    return rx.cond(counts.contains(shown), counts[shown], SharedConversationState.message_count).to(
        int
    )


def streamed_text() -> rx.Var[str]:
    """In the browser: the streaming reply, its pieces joined (the oldest text is highest)."""
    pieces = [getattr(SharedConversationState, f"{PIECE_VAR}{k}") for k in range(PIECE_LEVELS)]
    return functools.reduce(operator.add, reversed(pieces)).to(str)


def shown_on_branch(chosen: rx.Var[str]) -> rx.Var[bool]:
    """In the browser: whether that tab shows a branch off the newest path (``on_branch``)."""
    return SharedConversationState.branches.contains(_shown_leaf(chosen))
