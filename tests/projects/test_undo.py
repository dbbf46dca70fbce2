"""One undo for a project deleted with its chats: the project and all those chats come back.

The project is kept, marked, for the chats' soft-delete window; past it, the project and its
files go for good and an undo finds nothing. Both engines (``conftest.py``).
"""

from __future__ import annotations

import itertools

import pytest

from backend.errors import ChatNotFoundError, NotFoundError
from backend.projects import Projects

WINDOW_S = 60


@pytest.fixture
def moments():
    """A clock the test moves: 1 ms per reading, ``jump`` to skip ahead."""
    now = itertools.count(1_700_000_000_000)
    skipped = [0]

    def clock() -> int:
        return next(now) + skipped[0]

    clock.jump = lambda ms: skipped.__setitem__(0, skipped[0] + ms)  # type: ignore[attr-defined]
    return clock


@pytest.fixture
def windowed(chats, moments) -> Projects:
    return Projects(chats, clock=moments, soft_delete_window_s=WINDOW_S)


def garden_with_chats(projects: Projects):
    garden = projects.create("Garden", instructions="Answer as a gardener.")
    one, two = projects.create_chat(garden.id, "one"), projects.create_chat(garden.id, "two")
    projects.add_file(garden.id, "notes.md", "text/markdown", b"Water the tomatoes daily.")
    projects.turns.remember(one.id, "grows basil")
    return garden, one, two


def test_one_restore_brings_back_the_project_and_every_chat_it_deleted(windowed, chats):
    garden, one, two = garden_with_chats(windowed)
    garden = windowed.get(garden.id)
    windowed.delete(garden.id, "delete")
    assert windowed.list_projects() == [] and windowed.project_of(one.id) is None
    with pytest.raises(ChatNotFoundError):
        chats.get_summary(two.id)
    assert not windowed.turns.remember(one.id, "lost")  # a deleted project takes no memory
    restored = windowed.restore(garden.id)
    assert restored == garden
    assert sorted(c.title for c in windowed.chats_of(garden.id)) == ["one", "two"]
    assert windowed.memory(garden.id) == "- grows basil\n"
    assert windowed.files.search(garden.id, "tomatoes")[0].file_name == "notes.md"


def test_a_chat_deleted_before_the_project_stays_deleted(windowed, chats):
    garden, one, two = garden_with_chats(windowed)
    chats.delete_chat(one.id)  # on its own, earlier: its own undo, not the project's
    assert windowed.delete(garden.id, "delete").deleted == (two.id,)
    windowed.restore(garden.id)
    assert [c.id for c in windowed.chats_of(garden.id)] == [two.id]
    with pytest.raises(ChatNotFoundError):
        chats.get_summary(one.id)


def test_restoring_twice_or_a_live_project_is_harmless(windowed):
    garden = windowed.get(garden_with_chats(windowed)[0].id)
    assert windowed.restore(garden.id) == garden
    windowed.delete(garden.id, "delete")
    windowed.restore(garden.id)
    assert windowed.restore(garden.id) == garden


def test_past_the_window_the_project_is_purged_and_the_undo_refused(windowed, moments):
    garden, _one, _two = garden_with_chats(windowed)
    windowed.delete(garden.id, "delete")
    moments.jump(WINDOW_S * 1000 + 1)
    assert windowed.sweep() == [garden.id]
    with pytest.raises(NotFoundError):
        windowed.restore(garden.id)
    assert windowed.memberships() == {}


def test_a_project_moved_out_is_gone_at_once_and_has_no_undo(windowed, chats):
    garden, one, two = garden_with_chats(windowed)
    windowed.delete(garden.id, "move_out")
    with pytest.raises(NotFoundError):
        windowed.restore(garden.id)
    assert {chats.get_summary(c.id).title for c in (one, two)} == {"one", "two"}


def test_a_deleted_project_reimported_comes_back_live(windowed, chats):
    garden, _one, _two = garden_with_chats(windowed)
    (snapshot,) = windowed.transfer.snapshot()
    windowed.delete(garden.id, "delete")
    assert windowed.transfer.restore(snapshot, now_ms=1) == "new"
    assert windowed.get(garden.id).name == "Garden"
