"""Per-row sidebar updates: a change to one chat re-sends that chat's row, not the list, and
re-renders that row only.

``SharedDirectoryState.place`` is what the bridge's reload runs; the vars it marks dirty are
exactly what Reflex puts in the delta every tab of the user receives. The row component
(``chat_row``) is a React memo: it re-renders only when its props change, provided its body
reads no state of its own (a state read compiles to a hook that re-renders it on every change).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from chatsapp.components.chat_row import chat_item, chat_row
from chatsapp.states.directory import PAGE_SIZE, SharedDirectoryState
from chatsapp.states.rows import AgentChoiceRow, ChatRow


def row(n: int, title: str = "", updated_at: int = 0) -> ChatRow:
    return ChatRow(id=f"c{n}", title=title or f"Chat {n}", updated_at=updated_at or 1000 - n)


@pytest.fixture
def directory() -> SharedDirectoryState:
    state = SharedDirectoryState(_reflex_internal_init=True)
    state.place([row(n) for n in range(5)])
    state._clean()
    return state


def sent(state: SharedDirectoryState) -> set[str]:
    return set(state.dirty_vars)


class TestPerRowUpdates:
    def test_a_rename_re_sends_only_that_chats_row(self, directory) -> None:
        slot = next(k for k in range(PAGE_SIZE) if directory.slot(k).id == "c3")
        rows = directory.rows()
        rows[3] = dataclasses.replace(rows[3], title="Trip to Lisbon")
        directory.place(rows)
        assert sent(directory) == {f"slot_{slot}"}
        assert [r.title for r in directory.rows()][3] == "Trip to Lisbon"

    def test_a_bumped_chat_moves_to_the_top_re_sending_its_row_and_the_positions(
        self, directory
    ) -> None:
        rows = directory.rows()
        bumped = dataclasses.replace(rows[4], preview="fine, thanks", updated_at=5000)
        directory.place([bumped, *rows[:4]])
        slot = next(k for k in range(PAGE_SIZE) if directory.slot(k).id == "c4")
        assert sent(directory) == {f"slot_{slot}", "positions"}
        assert [r.id for r in directory.rows()] == ["c4", "c0", "c1", "c2", "c3"]

    def test_an_unchanged_list_sends_nothing(self, directory) -> None:
        directory.place(directory.rows())
        assert sent(directory) == set()

    def test_a_deleted_chat_frees_its_slot_and_a_new_chat_takes_a_free_one(self, directory) -> None:
        rows = directory.rows()
        directory.place([r for r in rows if r.id != "c2"])
        assert [r.id for r in directory.rows()] == ["c0", "c1", "c3", "c4"]
        assert directory.count == 4
        directory.place([row(9, updated_at=9000), *directory.rows()])
        assert [r.id for r in directory.rows()] == ["c9", "c0", "c1", "c3", "c4"]
        assert directory.count == 5

    def test_more_chats_than_a_page_shows_the_newest_page(self) -> None:
        state = SharedDirectoryState(_reflex_internal_init=True)
        state.place([row(n) for n in range(PAGE_SIZE)])
        assert len(state.rows()) == PAGE_SIZE
        assert state.count == PAGE_SIZE


class TestRowsRenderFromTheirOwnValues:
    def test_the_row_component_reads_no_state_only_its_props(self) -> None:
        body = chat_row._definition.component
        assert {**body._get_all_hooks_internal(), **body._get_all_hooks()} == {}
        assert "rx_state_" not in str(body.render())

    def test_each_slot_feeds_the_row_its_own_values(self) -> None:
        rendered = str(chat_item(SharedDirectoryState.slot_7).render())
        assert "slot_7" in rendered and "active" in rendered


class TestEachTabSharesTheEmptyRows:
    """Reflex deep-copies every var's default into each new state: a tab's 40 empty slots were
    40 copies (bench/load_bench.py: 207 KB per idle tab with copies, 191 KB shared)."""

    def test_a_new_state_holds_the_class_default_rows_not_copies(self) -> None:
        first = SharedDirectoryState(_reflex_internal_init=True)
        second = SharedDirectoryState(_reflex_internal_init=True)
        # (Reading a var wraps its value in a fresh proxy; the row is what it wraps.)
        assert all(
            first.slot(k).__wrapped__ is second.slot(k).__wrapped__ for k in range(PAGE_SIZE)
        )

    def test_a_row_cannot_be_changed_in_place(self) -> None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            row(1).title = "shared by every tab"  # type: ignore[misc]

    def test_a_mutable_row_type_is_still_copied(self) -> None:
        choice = AgentChoiceRow("a1", "Helper")
        copied = copy.deepcopy(choice)
        copied.name = "Changed"
        assert choice.name == "Helper"
