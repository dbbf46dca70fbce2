"""A data folder holds only files ``backend.data_folder`` names, and ``chats backup`` then
``chats restore`` into an empty folder gives every one of them back: accounts, the settings
an admin changed, each person's directory (memory, agents, the attachment pool) and chats."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from backend.accounts import CONSOLE_ACTOR, Accounts
from backend.agents import AgentLibrary, AgentSpec
from backend.chats import Chats
from backend.cli import cli
from backend.data_folder import (
    ACCOUNTS_FILE,
    DATA_FILES,
    SETTINGS_FILE,
    SETUP_CODE_FILE,
    data_file,
    is_backed_up,
)
from backend.endpoints import ModelEndpoints
from backend.portability import backup_data_dir, restore_data_dir
from backend.sharing import ChatRef, Sharing
from tests.portability.folders import ENDPOINT_KEY, IMAGE, PASSWORD, run_one_turn, settings_for


def chats_command(data_dir: Path, *args: str) -> None:
    env = {"CHATS_DATA_DIR": str(data_dir), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
    result = CliRunner(env=env).invoke(cli, list(args), prog_name="chats")
    assert result.exit_code == 0, result.output


def files_of(data_dir: Path) -> set[str]:
    return {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file()}


@dataclasses.dataclass
class Written:
    """A data folder with one of everything the app writes, and what went into it."""

    data_dir: Path
    files_seen: set[str]  # every file that existed at some point, side files included
    admin_id: str
    chat_id: str
    fork_id: str


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    data_dir = tmp_path_factory.mktemp("written") / "data"
    settings = settings_for(data_dir)
    seen: set[str] = set()
    with Accounts(settings) as accounts:
        assert accounts.setup_code_for_console() is not None  # setup-code.txt
        seen |= files_of(data_dir)
        admin = accounts.create_user(CONSOLE_ACTOR, "root-admin", PASSWORD, role="admin")
        accounts.sign_in("root-admin", PASSWORD, "192.0.2.1")
        endpoints = ModelEndpoints(settings, accounts)
        try:
            endpoints.save_endpoint(
                admin.id, "lab", "http://127.0.0.1:9/v1", api_key=ENDPOINT_KEY, models=["m1"]
            )
        finally:
            endpoints.close()
    with Chats(data_dir, admin.id) as chats:
        chat = chats.create_chat("Kayak trip")
        chats.get_chat(chat.id).session.append_message(
            {"id": "a", "role": "user", "parts": [{"type": "text", "text": "paddles"}, IMAGE]}
        )
        fork = chats.fork_chat(chat.id, "a")  # its image lives in the directory's pool
        chats.set_shared_context("memory", "Keeps the kayak in the boathouse.")
        AgentLibrary(chats.database).create(AgentSpec(name="Guide", instructions="Be brief."))
        asyncio.run(run_one_turn(settings, chats, chat.id))
        seen |= files_of(data_dir)
    with Accounts(settings) as accounts, Sharing(settings, accounts) as sharing:
        accounts.create_user(admin.id, "guest", PASSWORD)
        sharing.share(admin, ChatRef(owner_id=admin.id, chat_id=chat.id), "guest", "viewer")
        seen |= files_of(data_dir)
    seen |= files_of(data_dir)
    yield Written(data_dir, seen, admin.id, chat.id, fork.id)


def dump(path: Path) -> list[str]:
    """Every schema statement and row of a database (its runs, session state, keys...)."""
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute(f"SELECT * FROM {table}").fetchall())


class TestTheListOfFiles:
    def test_every_file_the_app_writes_is_named_by_the_list(self, written: Written):
        unnamed = sorted(f for f in written.files_seen if data_file(f) is None)
        assert unnamed == []

    def test_every_kind_in_the_list_was_written_by_the_app(self, written: Written):
        kinds = {data_file(f).kind for f in written.files_seen}  # type: ignore[union-attr]
        # `chats migrate` writes its journal (tests/portability/test_migrate.py checks it)
        assert kinds == {kind.kind for kind in DATA_FILES} - {"migration journal"}

    def test_side_files_belong_to_their_database_and_are_never_backed_up_alone(self):
        assert data_file("alice/directory.sqlite-wal") == data_file("alice/directory.sqlite")
        assert not is_backed_up("alice/directory.sqlite-wal")
        assert is_backed_up("alice/directory.sqlite")

    def test_the_setup_code_is_not_backed_up(self):
        assert not is_backed_up(SETUP_CODE_FILE)


class TestBackupThenRestore:
    def test_an_empty_folder_gets_back_every_database(self, written: Written, tmp_path: Path):
        chats_command(written.data_dir, "backup", "--out", str(tmp_path / "backup.zip"))
        restored = tmp_path / "restored"
        chats_command(restored, "restore", str(tmp_path / "backup.zip"))
        databases = {f for f in written.files_seen if is_backed_up(f)}
        assert {f for f in files_of(restored) if is_backed_up(f)} == databases
        assert SETTINGS_FILE in databases and ACCOUNTS_FILE in databases
        for name in sorted(databases):  # directories are compared by what they answer, below
            if data_file(name).kind != "directory":  # type: ignore[union-attr]
                assert dump(restored / name) == dump(written.data_dir / name), name

    def test_the_admin_added_endpoint_and_its_key_come_back(self, written: Written, tmp_path: Path):
        restored = self.restore(written, tmp_path)
        settings = settings_for(restored)
        with Accounts(settings) as accounts:
            endpoints = ModelEndpoints(settings, accounts)
            try:
                lab = endpoints.endpoint("lab")
            finally:
                endpoints.close()
        assert (lab.base_url, lab.api_key, list(lab.models)) == (
            "http://127.0.0.1:9/v1",
            ENDPOINT_KEY,
            ["m1"],
        )

    def test_accounts_and_their_sign_ins_come_back(self, written: Written, tmp_path: Path):
        restored = self.restore(written, tmp_path)
        for table in ("users", "sessions", "account_settings"):
            assert rows(restored / ACCOUNTS_FILE, table) == rows(
                written.data_dir / ACCOUNTS_FILE, table
            )
        with Accounts(settings_for(restored)) as accounts:
            assert accounts.sign_in("root-admin", PASSWORD, "192.0.2.1").user.id == (
                written.admin_id
            )

    def test_the_directory_comes_back_with_chats_memory_agents_and_pool(
        self, written: Written, tmp_path: Path
    ):
        restored = self.restore(written, tmp_path)
        with Chats(written.data_dir, written.admin_id) as before:
            expected = self.contents(before, written)
        with Chats(restored, written.admin_id) as after:
            assert self.contents(after, written) == expected
            fork_image = after.get_chat(written.fork_id).session.get_message("a")["parts"][1]
            assert fork_image["url"] == IMAGE["url"]  # read from the restored pool

    def test_a_restore_writes_no_file_the_list_does_not_name(self, tmp_path: Path):
        planted = tmp_path / "planted.zip"
        names = [SETUP_CODE_FILE, "evil.sh", "alice/chats/notes.txt", "../outside.sqlite"]
        with zipfile.ZipFile(planted, "w") as zip_file:
            zip_file.writestr(
                "backup.json", json.dumps({"format": "chats.backup", "databases": names})
            )
            for name in names:
                zip_file.writestr(name, "planted")
        target = tmp_path / "target"
        target.mkdir()
        report = restore_data_dir(planted, target)
        assert sorted(name for name, _ in report.failures) == sorted(names)
        assert files_of(tmp_path) == {"planted.zip"}

    @staticmethod
    def restore(written: Written, tmp_path: Path) -> Path:
        backup_data_dir(written.data_dir, tmp_path / "backup.zip")
        restore_data_dir(tmp_path / "backup.zip", tmp_path / "restored")
        return tmp_path / "restored"

    @staticmethod
    def contents(chats: Chats, written: Written) -> tuple[object, ...]:
        session = chats.get_chat(written.chat_id).session
        agents = AgentLibrary(chats.database).list_agents()
        return (
            [(s.id, s.title, s.last_message_preview) for s in chats.list_chats()],
            [m["id"] for m in session.get_history()],
            chats.get_shared_context("memory"),
            [(a.agent_id, a.name) for a in agents],
            [hit.chat_id for hit in chats.search_messages("paddles")],
            chats.database.query_one("SELECT count(*) FROM pool_attachments")[0],
        )
