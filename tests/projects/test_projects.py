"""Projects: create, rename, delete (with what becomes of the chats), chats in and out, memory.

Every test runs on both engines (``conftest.py``); bad input changes nothing and says why.
"""

from __future__ import annotations

import pytest

from backend.chats import Chats
from backend.errors import ChatNotFoundError, InvalidInputError, NotFoundError
from backend.projects import MAX_NAME_CHARS, Projects, ProjectsChanged


def test_a_project_is_created_renamed_and_listed_oldest_first(projects):
    first = projects.create("Garden", instructions="  Answer as a gardener.  ")
    second = projects.create("Taxes")
    renamed = projects.rename(first.id, "Vegetable garden")
    assert renamed.instructions == "Answer as a gardener."
    assert [(p.id, p.name) for p in projects.list_projects()] == [
        (first.id, "Vegetable garden"),
        (second.id, "Taxes"),
    ]
    assert projects.get(first.id).use_personal_memory is True


@pytest.mark.parametrize(
    "name",
    ["日本語のプロジェクト", "🌱 + 🍅", "Ω≈ç√∫", "שלום עולם", "a\u200db", "x" * MAX_NAME_CHARS],
)
def test_a_name_may_be_any_unicode_and_reads_back_as_written(projects, name):
    project = projects.create(name)
    assert projects.get(project.id).name == name


def test_a_lone_surrogate_in_a_name_is_stored_by_the_text_rule(projects):
    project = projects.create("half \ud800 pair")
    assert projects.get(project.id).name == "half \ufffd pair"


@pytest.mark.parametrize("name", ["", "   ", "x" * (MAX_NAME_CHARS + 1), None, 7])
def test_a_blank_too_long_or_non_text_name_is_refused_and_nothing_is_stored(projects, name):
    with pytest.raises(InvalidInputError):
        projects.create(name)
    assert projects.list_projects() == []


def test_renaming_to_a_bad_name_keeps_the_old_one(projects):
    project = projects.create("Garden")
    with pytest.raises(InvalidInputError):
        projects.rename(project.id, "  ")
    assert projects.get(project.id).name == "Garden"


def test_an_unknown_project_is_a_not_found_error(projects, chats):
    chat = chats.create_chat("loose")
    with pytest.raises(NotFoundError, match="project"):
        projects.rename("prj_missing", "x")
    with pytest.raises(NotFoundError):
        projects.move_chat(chat.id, "prj_missing")
    assert projects.project_of(chat.id) is None


def test_chats_move_in_out_and_between_projects(projects, chats):
    garden, taxes = projects.create("Garden"), projects.create("Taxes")
    chat = chats.create_chat("tomatoes")
    projects.move_chat(chat.id, garden.id)
    assert projects.project_of(chat.id) == garden
    assert [s.id for s in projects.chats_of(garden.id)] == [chat.id]
    projects.move_chat(chat.id, taxes.id)
    assert projects.chats_of(garden.id) == [] and projects.project_of(chat.id) == taxes
    projects.move_chat(chat.id, None)
    assert projects.project_of(chat.id) is None
    assert projects.memberships() == {}


def test_a_new_chat_started_in_a_project_belongs_to_it(projects):
    garden = projects.create("Garden")
    summary = projects.create_chat(garden.id, "first")
    assert projects.project_of(summary.id) == garden


def test_moving_a_chat_another_tab_just_deleted_is_refused_and_changes_nothing(projects, chats):
    garden = projects.create("Garden")
    chat = chats.create_chat("gone soon")
    chats.delete_chat(chat.id)  # the other tab
    with pytest.raises(ChatNotFoundError):
        projects.move_chat(chat.id, garden.id)
    assert projects.memberships() == {}
    chats.restore_chat(chat.id)
    assert projects.project_of(chat.id) is None


def test_a_deleted_chat_that_is_restored_comes_back_in_its_project(projects, chats):
    garden = projects.create("Garden")
    chat = projects.create_chat(garden.id)
    chats.delete_chat(chat.id)
    assert projects.chats_of(garden.id) == []
    chats.restore_chat(chat.id)
    assert [s.id for s in projects.chats_of(garden.id)] == [chat.id]


def test_deleting_a_project_moves_its_chats_out_when_asked(projects, chats):
    garden = projects.create("Garden")
    kept = projects.create_chat(garden.id, "kept")
    result = projects.delete(garden.id, "move_out")
    assert result.moved_out == (kept.id,) and result.deleted == ()
    assert projects.list_projects() == []
    assert projects.project_of(kept.id) is None
    assert chats.get_summary(kept.id).title == "kept"


def test_deleting_a_project_with_its_chats_can_be_undone_chat_by_chat(projects, chats):
    garden = projects.create("Garden")
    one, two = projects.create_chat(garden.id, "one"), projects.create_chat(garden.id, "two")
    result = projects.delete(garden.id, "delete")
    assert set(result.deleted) == {one.id, two.id}
    with pytest.raises(ChatNotFoundError):
        chats.get_summary(one.id)
    chats.restore_chat(one.id)  # the usual undo: back as a loose chat
    assert chats.get_summary(one.id).title == "one"
    assert projects.project_of(one.id) is None


def test_deleting_a_project_needs_a_choice_for_its_chats(projects):
    garden = projects.create("Garden")
    with pytest.raises(InvalidInputError, match="move_out"):
        projects.delete(garden.id, "keep")  # type: ignore[arg-type]
    assert projects.get(garden.id) == garden


def test_remember_appends_to_the_project_memory_only(projects, chats):
    garden, taxes = projects.create("Garden"), projects.create("Taxes")
    chat = projects.create_chat(garden.id)
    loose = chats.create_chat("loose")
    assert projects.turns.remember(chat.id, "likes basil")
    assert not projects.turns.remember(loose.id, "not for a project")
    assert projects.memory(garden.id) == "- likes basil\n"
    assert projects.memory(taxes.id) == ""
    assert chats.list_shared_contexts() == []


def test_the_personal_memory_switch_is_kept_per_project(projects, chats):
    garden = projects.create("Garden")
    chat = projects.create_chat(garden.id)
    projects.set_use_personal_memory(garden.id, False)
    turn = projects.turns.turn_context(chat.id, "")
    assert turn is not None and turn.use_personal_memory is False
    with pytest.raises(InvalidInputError):
        projects.set_use_personal_memory(garden.id, "no")  # type: ignore[arg-type]


def test_changes_are_announced_after_commit_to_every_listener(projects, chats):
    seen: list[ProjectsChanged] = []
    projects.subscribe(seen.append)
    garden = projects.create("Garden")
    chat = projects.create_chat(garden.id)
    projects.delete(garden.id, "move_out")
    assert [(e.kind, e.chat_id) for e in seen] == [
        ("created", ""),
        ("chat_moved", chat.id),
        ("deleted", ""),
    ]
    assert {e.directory_id for e in seen} == {chats.directory_id}


def test_projects_live_in_the_directory_and_survive_reopening(tmp_path, chats):
    garden = Projects(chats).create("Garden")
    chat = Projects(chats).create_chat(garden.id)
    chats.close()
    with Chats(tmp_path / "data", "alice") as reopened:
        projects = Projects(reopened)
        assert projects.list_projects() == [garden]
        assert projects.project_of(chat.id) == garden


def test_one_person_never_sees_another_persons_projects(tmp_path, projects):
    projects.create("Alice's")
    with Chats(tmp_path / "data", "bob") as bob:
        assert Projects(bob).list_projects() == []
