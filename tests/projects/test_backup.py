"""Projects travel in a backup: they live in the directory database the backup copies."""

from __future__ import annotations

import pytest

from backend.chats import Chats
from backend.portability import backup_data_dir, restore_data_dir
from backend.projects import Projects


@pytest.mark.sqlite_only  # backup copies SQLite files (backup on PostgreSQL is still to come)
def test_a_backup_restores_projects_their_chats_files_and_memory(tmp_path, chats, projects):
    garden = projects.create("Garden 🌱", instructions="Answer as a gardener.")
    chat = projects.create_chat(garden.id, "tomatoes")
    projects.add_file(garden.id, "notes.md", "text/markdown", b"Water the tomatoes daily.")
    projects.turns.remember(chat.id, "grows basil")
    saved = projects.get(garden.id)
    backup_data_dir(tmp_path / "data", tmp_path / "backup.zip")
    restore_data_dir(tmp_path / "backup.zip", tmp_path / "restored")
    with Chats(tmp_path / "restored", "alice") as restored:
        again = Projects(restored)
        assert again.list_projects() == [saved]
        assert again.project_of(chat.id) == saved
        assert again.memory(garden.id) == "- grows basil\n"
        assert again.files.search(garden.id, "tomatoes")[0].file_name == "notes.md"
