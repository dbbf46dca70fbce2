"""``chats projects list|create|rename|move|delete|add-file``: output, refusals, exit statuses."""

from __future__ import annotations

import json

from backend.chats import Chats as Directory


def _chat(data_dir, title: str) -> str:
    with Directory(data_dir, "local") as directory:
        return directory.create_chat(title).id


def test_create_move_list_and_delete_a_project(chats, data_dir):
    chat_id = _chat(data_dir, "tomatoes")
    created = chats(
        "projects", "create", "--user", "local", "Jardin 🌱", "--instructions", "Be brief."
    )
    assert created.exit_code == 0, created.output
    project_id = created.output.strip()
    moved = chats("projects", "move", "--user", "local", chat_id, "--to", "Jardin 🌱")
    assert moved.exit_code == 0, moved.output
    listed = json.loads(chats("projects", "list", "--user", "local", "--json").output)
    assert [(p["id"], p["name"], p["instructions"], p["chats"]) for p in listed] == [
        (project_id, "Jardin 🌱", "Be brief.", [chat_id])
    ]
    assert chats("projects", "list", "--user", "local").output == (
        f"{project_id}\tJardin 🌱\t{chat_id}\n"
    )
    deleted = chats("projects", "delete", "--user", "local", project_id, "--chats", "move-out")
    assert deleted.output == "moved out 1, deleted 0\n"
    assert json.loads(chats("projects", "list", "--user", "local", "--json").output) == []


def test_moving_a_deleted_chat_names_it_and_moves_the_others(chats, data_dir):
    chat_id, gone = _chat(data_dir, "kept"), _chat(data_dir, "gone")
    with Directory(data_dir, "local") as directory:
        directory.delete_chat(gone)
    chats("projects", "create", "--user", "local", "P")
    result = chats("projects", "move", "--user", "local", gone, chat_id, "--to", "P")
    assert result.exit_code == 1 and gone in result.output
    listed = json.loads(chats("projects", "list", "--user", "local", "--json").output)
    assert listed[0]["chats"] == [chat_id]


def test_bad_input_is_refused_with_a_reason(chats, data_dir, tmp_path):
    assert chats("projects", "create", "--user", "local", "  ").exit_code == 2
    assert chats("projects", "rename", "--user", "local", "missing", "x").exit_code == 1
    assert chats("projects", "move", "--user", "local", "c1").exit_code == 2  # no --to/--out
    chats("projects", "create", "--user", "local", "Twin")
    chats("projects", "create", "--user", "local", "Twin")
    twin = chats("projects", "move", "--user", "local", "c1", "--to", "Twin")
    assert twin.exit_code == 2 and "give the id" in twin.output
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    project_id = chats("projects", "create", "--user", "local", "Docs").output.strip()
    refused = chats("projects", "add-file", "--user", "local", project_id, str(image))
    assert refused.exit_code == 2 and "image" in refused.output


def test_add_file_stores_a_documents_text(chats, data_dir, tmp_path):
    note = tmp_path / "notes.md"
    note.write_text("Water the tomatoes.")
    project_id = chats("projects", "create", "--user", "local", "Garden").output.strip()
    added = chats("projects", "add-file", "--user", "local", project_id, str(note))
    assert added.exit_code == 0, added.output
    assert added.output.endswith("\tnotes.md\t19 characters\n")
