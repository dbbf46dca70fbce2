"""Projects travel in a person's export: name, instructions, switch, memory, files, chats.

A ``.zip`` export carries ``projects.json``; importing it into another person's directory
gives the same projects holding the imported copies of their chats. Importing again changes
nothing; a malformed, oversize or hostile project entry is refused by name and nothing of it
is written, while the rest imports. Both engines (``conftest.py``).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backend.chats import Chats
from backend.portability import import_file, import_file_bounded, write_zip_export
from backend.portability.export_json import all_chat_ids
from backend.projects import Projects

HOSTILE = "<script>alert(1)</script> ‮🌱 \"quoted\" 'x'"


@pytest.fixture
def bob(chats):
    directory = Chats(chats.layout.root, "bob", soft_delete_window_s=3600)
    yield directory
    directory.close()


def garden_export(chats: Chats, projects: Projects, path: Path) -> dict:
    """Alice's garden project with a chat, a file, memory and the switch off; a loose chat."""
    garden = projects.create(HOSTILE, instructions="Answer as a gardener.")
    projects.set_use_personal_memory(garden.id, False)
    inside = projects.create_chat(garden.id, "tomatoes")
    chats.create_chat("loose")
    projects.add_file(garden.id, "notes.md", "text/markdown", b"Water the tomatoes daily.")
    projects.turns.remember(inside.id, "grows basil")
    projects.create("Empty")
    write_zip_export(chats, all_chat_ids(chats), str(path))
    with zipfile.ZipFile(path) as zip_file:
        return json.loads(zip_file.read("projects.json"))


def by_name(projects: Projects) -> dict[str, str]:
    return {p.name: p.id for p in projects.list_projects()}


def test_an_export_carries_each_project_and_an_import_restores_it(chats, projects, bob, tmp_path):
    document = garden_export(chats, projects, tmp_path / "export.zip")
    assert [p["name"] for p in document["projects"]] == [HOSTILE, "Empty"]
    report = import_file(bob, tmp_path / "export.zip")
    assert report.ok and report.projects == {"new": 2}
    theirs = Projects(bob)
    garden = theirs.get(by_name(theirs)[HOSTILE])
    assert (garden.instructions, garden.use_personal_memory) == ("Answer as a gardener.", False)
    assert theirs.memory(garden.id) == "- grows basil\n"
    assert [c.title for c in theirs.chats_of(garden.id)] == ["tomatoes"]
    assert {s.title for s in bob.list_chats()} == {"tomatoes", "loose"}
    (file,) = theirs.files.list_files(garden.id)
    assert (file.name, file.media_type) == ("notes.md", "text/markdown")
    assert theirs.files.search(garden.id, "tomatoes")[0].text == "Water the tomatoes daily."
    assert theirs.chats_of(by_name(theirs)["Empty"]) == []


def test_importing_the_same_export_again_changes_nothing(chats, projects, bob, tmp_path):
    garden_export(chats, projects, tmp_path / "export.zip")
    import_file(bob, tmp_path / "export.zip")
    theirs = Projects(bob)
    before = [
        (p, theirs.memory(p.id), theirs.files.list_files(p.id)) for p in theirs.list_projects()
    ]
    again = import_file(bob, tmp_path / "export.zip")
    assert again.ok and again.projects == {"unchanged": 2} and again.imported == 0
    after = [
        (p, theirs.memory(p.id), theirs.files.list_files(p.id)) for p in theirs.list_projects()
    ]
    assert after == before


def test_a_newer_export_updates_the_project_and_adds_what_it_lacks(chats, projects, bob, tmp_path):
    garden_export(chats, projects, tmp_path / "first.zip")
    import_file(bob, tmp_path / "first.zip")
    garden_id = by_name(projects)[HOSTILE]
    projects.rename(garden_id, "Garden")
    projects.add_file(garden_id, "seeds.txt", "text/plain", b"Sow rye in autumn.")
    projects.create_chat(garden_id, "rye")
    write_zip_export(chats, all_chat_ids(chats), str(tmp_path / "second.zip"))
    report = import_file(bob, tmp_path / "second.zip")
    assert report.ok and report.projects == {"updated": 1, "unchanged": 1}
    theirs = Projects(bob)
    assert set(by_name(theirs)) == {"Garden", "Empty"}
    garden_id = by_name(theirs)["Garden"]
    assert sorted(f.name for f in theirs.files.list_files(garden_id)) == ["notes.md", "seeds.txt"]
    assert sorted(c.title for c in theirs.chats_of(garden_id)) == ["rye", "tomatoes"]


def rewrite_projects(path: Path, change: Callable[[Any], Any]) -> Path:
    """The zip at ``path`` with its projects.json passed through ``change``."""
    out = path.with_name("changed.zip")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "projects.json":
                data = json.dumps(change(json.loads(data))).encode()
            target.writestr(info, data)
    return out


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda p: p | {"id": "../../etc"}, "prj_ and 16 hex digits"),
        (lambda p: p | {"name": "   "}, "must not be blank"),
        (lambda p: p | {"name": "x" * 101}, "longer than 100"),
        (lambda p: p | {"memory": "m" * 1_000_001}, "memory is longer"),
        (lambda p: p | {"use_personal_memory": "yes"}, "true or false"),
        (lambda p: p | {"created_at": -5}, "no whole number"),
        (lambda p: p | {"files": [p["files"][0] | {"chunks": ["c" * 1201]}]}, "chunk longer"),
        (lambda p: p | {"files": [p["files"][0] | {"id": "pf_<img>"}]}, "pf_ and 16 hex"),
        (lambda p: p | {"files": [p["files"][0] | {"name": 7}]}, "name is text"),
        (lambda p: "not an object", "an object"),
    ],
)
def test_a_bad_project_entry_is_refused_by_name_and_the_rest_imports(
    chats, projects, bob, tmp_path, spoil, reason
):
    garden_export(chats, projects, tmp_path / "export.zip")

    def change(document: dict) -> dict:
        first, second = document["projects"]
        return document | {"projects": [spoil(first), second]}

    report = import_file(bob, rewrite_projects(tmp_path / "export.zip", change))
    (failure,) = report.failures
    assert reason in failure.reason and failure.item.startswith("project ")
    assert report.projects == {"new": 1} and report.imported == 2
    assert list(by_name(Projects(bob))) == ["Empty"]


def test_a_hostile_name_in_a_report_is_escaped_and_cut(chats, projects, bob, tmp_path):
    garden_export(chats, projects, tmp_path / "export.zip")
    name = "\x1b[31mred\n" + "y" * 200

    def change(document: dict) -> dict:
        first, second = document["projects"]
        return document | {"projects": [first | {"name": name, "id": "bad"}, second]}

    (failure,) = import_file(bob, rewrite_projects(tmp_path / "export.zip", change)).failures
    assert "\x1b" not in failure.item and "\n" not in failure.item
    assert len(failure.item) < 120


def test_projects_json_that_is_no_projects_document_is_one_failure(chats, projects, bob, tmp_path):
    garden_export(chats, projects, tmp_path / "export.zip")
    report = import_file(bob, rewrite_projects(tmp_path / "export.zip", lambda _doc: [1, 2]))
    assert [f.item for f in report.failures] == ["projects.json"]
    assert report.imported == 2 and Projects(bob).list_projects() == []


def test_a_chat_left_out_of_the_export_is_left_out_of_its_project(chats, projects, tmp_path):
    garden = projects.create("Garden")
    kept = projects.create_chat(garden.id, "kept")
    projects.create_chat(garden.id, "not exported")
    write_zip_export(chats, [kept.id], str(tmp_path / "some.zip"))
    with zipfile.ZipFile(tmp_path / "some.zip") as zip_file:
        (entry,) = json.loads(zip_file.read("projects.json"))["projects"]
    assert entry["chats"] == [kept.id]


def test_the_bounded_import_reads_projects_in_its_child_too(chats, projects, bob, tmp_path):
    garden_export(chats, projects, tmp_path / "export.zip")
    report = import_file_bounded(bob, tmp_path / "export.zip")
    assert report.ok and report.projects == {"new": 2}
    assert "projects: 2 imported" in report.summary()
