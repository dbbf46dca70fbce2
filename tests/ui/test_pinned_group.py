"""The sidebar's "Pinned" group: a pinned chat shows there once, not in the list below."""

from __future__ import annotations

from backend.chats import ChatSummary
from backend.chats.sidebar import SidebarPage
from chatsapp.states.directory import SharedDirectoryState


def summary(n: int, pinned_at: int | None = None) -> ChatSummary:
    return ChatSummary(
        id=f"c{n}", title=f"Chat {n}", created_at=1, updated_at=1000 - n, pinned_at=pinned_at
    )


def test_a_pinned_chat_shows_in_the_group_only_and_still_counts_for_paging() -> None:
    state = SharedDirectoryState(_reflex_internal_init=True)
    chats = (summary(0), summary(1, pinned_at=5), summary(2), summary(3, pinned_at=9))
    state.show(SidebarPage(chats, pinned=(chats[3], chats[1])))
    assert [row.id for row in state.pinned] == ["c3", "c1"]
    assert all(row.pinned for row in state.pinned)
    assert [row.id for row in state.rows()] == ["c0", "c2"]
    assert state.count == 4  # the page held four: "load more" asks after the fourth


def test_unpinning_brings_the_chat_back_to_its_place_in_the_list() -> None:
    state = SharedDirectoryState(_reflex_internal_init=True)
    state.show(SidebarPage((summary(0), summary(1, pinned_at=5)), pinned=(summary(1, 5),)))
    state._clean()
    state.show(SidebarPage((summary(0), summary(1)), pinned=()))
    assert state.pinned == []
    assert [row.id for row in state.rows()] == ["c0", "c1"]
    assert "pinned" in state.dirty_vars
