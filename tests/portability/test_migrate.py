"""``chats migrate``: a data folder moved to PostgreSQL and back loses nothing.

The folder is filled by the app's own services with one of everything (as the backup test
does, tests/portability/test_data_folder.py), plus what only some folders hold: an archived
and a deleted chat, shared-memory entries, a compaction, a message long enough for
continuation rows, an imported chat, text the storage text rule maps, projects (one with
instructions, a file, memory, a pinned chat and another in it; one deleted with its chat).
Equality is read through the app: every person's zip export, the searches the target's own
index answers, the projects service, the accounts' passwords, the endpoints' keys, the
memberships.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR, Accounts
from backend.accounts import migration as accounts_migration
from backend.agents import AgentLibrary, AgentSpec
from backend.agents import migration as agents_migration
from backend.chats import Chats
from backend.chats import migration as chats_migration
from backend.config import parse_storage
from backend.data_folder import data_file
from backend.endpoints import ModelEndpoints
from backend.endpoints import migration as endpoints_migration
from backend.portability import all_chat_ids, import_file, write_zip_export
from backend.portability.migrate import (
    MigrationEvent,
    MigrationRefused,
    UnitCopied,
    migrate,
)
from backend.portability.migrate_sides import PostgresSide, Side, SqliteSide
from backend.projects import Projects
from backend.projects import migration as projects_migration
from backend.runtime import migration as runtime_migration
from backend.sessions import migration as sessions_migration
from backend.sharing import ChatRef, Sharing
from backend.sharing import migration as sharing_migration
from backend.storage import Database
from backend.storage.migration import column_names
from tests.portability.conftest import FIXTURES
from tests.portability.folders import (
    ENDPOINT_KEY,
    IMAGE,
    PASSWORD,
    engine,
    run_one_turn,
    settings_for,
)
from tests.portability.migrate_projects import (
    BOATHOUSE_NOTES,
    Killed,
    kill_mid_projects,
    populate_projects,
    project_contents,
)

LONG_TEXT = "continuation " * 140_000  # ~1.8 MB: stored as continuation rows
ODD_TITLE = "Caf\u00e9 \ud800 nul\x00 end"
ODD_TEXT = "lone \udc00 high \ud83d then nul \x00 and \U0001f600"


@dataclasses.dataclass(frozen=True)
class Folder:
    """A populated data folder and the people in it."""

    data_dir: Path
    people: dict[str, str]  # username → directory id
    chat_id: str  # the admin's chat with a run, session state and an image
    odd_chat_id: str  # the chat holding text the storage rule maps
    project_id: str  # the admin's live project (the other was deleted with its chat)
    old_project_id: str


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    data_dir = tmp_path_factory.mktemp("source") / "data"
    with engine(""):
        return populate(data_dir)


def populate(data_dir: Path) -> Folder:
    settings = settings_for(data_dir)
    with Accounts(settings) as accounts:
        admin = accounts.create_user(CONSOLE_ACTOR, "root-admin", PASSWORD, role="admin")
        guest = accounts.create_user(admin.id, "guest", PASSWORD + " 2")
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
        session = chats.get_chat(chat.id).session
        session.append_message(
            {"id": "a", "role": "user", "parts": [{"type": "text", "text": "paddles"}, IMAGE]}
        )
        session.append_message({"id": "b", "role": "assistant", "parts": [_text("oars")]})
        session.add_compaction("They spoke of paddles and oars.", "a", "b")
        chats.fork_chat(chat.id, "a")  # its image lives in the directory's pool
        long = chats.create_chat("Long one")
        chats.get_chat(long.id).session.append_message(
            {"id": "l", "role": "user", "parts": [_text(LONG_TEXT)]}
        )
        odd = chats.create_chat(ODD_TITLE)
        chats.get_chat(odd.id).session.append_message(
            {"id": "o", "role": "user", "parts": [_text(ODD_TEXT)]}
        )
        chats.archive_chat(chats.create_chat("Archived canoe").id)
        chats.delete_chat(chats.create_chat("Deleted raft").id)
        chats.set_shared_context("memory", "Keeps the kayak in the boathouse.")
        chats.index_shared("notes", "k1", "The boathouse key is under the mat.")
        chats.index_shared("notes", "k2", "Paddles are blue.")
        AgentLibrary(chats.database).create(AgentSpec(name="Guide", instructions="Be brief."))
        import_file(chats, FIXTURES / "chatgpt_conversations.json")
        asyncio.run(run_one_turn(settings, chats, chat.id))
        project_id, old_project_id = populate_projects(chats, chat.id)
    with Chats(data_dir, guest.id) as chats:
        mine = chats.create_chat("Guest notes")
        chats.get_chat(mine.id).session.append_message(
            {"id": "g", "role": "user", "parts": [_text("my own paddles")]}
        )
    with Accounts(settings) as accounts, Sharing(settings, accounts) as sharing:
        sharing.share(admin, ChatRef(owner_id=admin.id, chat_id=chat.id), "guest", "viewer")
    people = {"root-admin": admin.id, "guest": guest.id}
    return Folder(data_dir, people, chat.id, odd.id, project_id, old_project_id)


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


@dataclasses.dataclass(frozen=True)
class Place:
    """Where a copy of the folder lives: the storage, and the root its directories are under."""

    storage: str  # "" (SQLite) or a postgresql:// URL
    root: Path  # the data folder (SQLite) or the logical root (PostgreSQL)

    def side(self) -> Side:
        if self.storage:
            location = parse_storage(self.storage)
            assert not isinstance(location, str)
            return PostgresSide(location, self.root)
        return SqliteSide(self.root)


def run(source: Place, target: Place, listener: Callable[[MigrationEvent], None] | None = None):
    sides = [source.side(), target.side()]
    try:
        return migrate(sides[0], sides[1], listener=listener)
    finally:
        for side in sides:
            side.close()


def contents(place: Place, folder: Folder, tmp_path: Path) -> dict[str, object]:
    """Everything a person sees, read through the app on ``place``'s engine."""
    seen: dict[str, object] = {}
    tmp_path.mkdir(parents=True, exist_ok=True)
    with engine(place.storage):
        for username, directory_id in folder.people.items():
            with Chats(place.root, directory_id) as chats:
                seen[username] = person_contents(chats, tmp_path / f"{username}.zip")
        settings = settings_for(place.root, place.storage)
        with Accounts(settings) as accounts:
            for username, password in (("root-admin", PASSWORD), ("guest", PASSWORD + " 2")):
                accounts.sign_in(username, password, "192.0.2.9")  # raises on a wrong one
            admin = accounts.user_by_username("root-admin")
            assert admin is not None
            endpoints = ModelEndpoints(settings, accounts)
            try:
                seen["endpoints"] = [
                    (e.name, e.base_url, e.api_key, e.models) for e in endpoints.all_endpoints()
                ]
            finally:
                endpoints.close()
            with Sharing(settings, accounts) as sharing:
                chat = ChatRef(owner_id=admin.id, chat_id=folder.chat_id)
                seen["members"] = [(m.user_id, m.role) for m in sharing.members(admin, chat)]
    return seen


def person_contents(chats: Chats, zip_path: Path) -> dict[str, object]:
    write_zip_export(chats, all_chat_ids(chats), str(zip_path))
    with zipfile.ZipFile(zip_path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files.pop("manifest.json"))
    manifest.pop("exported_at")
    return {
        "manifest": manifest,
        "files": files,
        "memory": chats.list_shared_contexts(),
        "entries": chats.search_shared("notes", "boathouse paddles"),
        "search": sorted((h.chat_id, h.message_id) for h in chats.search_messages("paddles")),
        "titles": sorted(s.id for s in chats.search_chats("kayak")),
        "agents": [(a.agent_id, a.name) for a in AgentLibrary(chats.database).list_agents()],
        "projects": project_contents(chats),
    }


@pytest.fixture
def places(folder: Folder, postgres_url: str, tmp_path: Path) -> Iterator[tuple[Place, ...]]:
    """The source folder (copied: a run must not depend on another's leftovers), PostgreSQL
    under the source's root, and an empty folder to come back to."""
    source = Place("", tmp_path / "source")
    shutil.copytree(folder.data_dir, source.root)
    yield source, Place(postgres_url, source.root), Place("", tmp_path / "back")


class TestRoundTrip:
    def test_sqlite_to_postgresql_and_back_loses_nothing(
        self, folder: Folder, places: tuple[Place, ...], tmp_path: Path
    ):
        source, postgres, back = places
        there = run(source, postgres)
        home = run(postgres, back)
        before = contents(source, folder, tmp_path / "a")
        assert contents(postgres, folder, tmp_path / "b") == before
        assert contents(back, folder, tmp_path / "c") == before
        assert there.people == home.people == 2
        assert there.chats == home.chats >= 7
        assert there.messages == home.messages > 8
        assert there.attachments == home.attachments >= 2
        assert there.bytes == home.bytes > len(LONG_TEXT)
        admin = before["root-admin"]
        assert isinstance(admin, dict)  # and none of what is compared is empty:
        assert admin["search"] and admin["titles"] and admin["entries"] and admin["agents"]
        assert there.per_table["project_chunks"] == home.per_table["project_chunks"] == 3
        written = {p.relative_to(back.root).as_posix() for p in back.root.rglob("*.sqlite")}
        kinds = {data_file(name).kind for name in written}  # type: ignore[union-attr]
        assert "migration journal" in kinds and None not in map(data_file, written)
        assert before["members"] and before["endpoints"] == [
            ("lab", "http://127.0.0.1:9/v1", ENDPOINT_KEY, ("m1",))
        ]

    def test_text_the_storage_rule_maps_reads_back_as_the_rule_says(
        self, folder: Folder, places: tuple[Place, ...]
    ):
        source, postgres, back = places
        run(source, postgres)
        run(postgres, back)
        for place in places:
            with engine(place.storage), Chats(place.root, folder.people["root-admin"]) as chats:
                history = chats.get_chat(folder.odd_chat_id).session.get_history()
                assert history[0]["parts"][0]["text"] == ODD_TEXT  # message JSON is exact
                title = chats.get_summary(folder.odd_chat_id).title
                assert title == "Caf\u00e9 \ufffd nul\ufffd end"  # titles follow the rule


def kill_after(units: int) -> Callable[[MigrationEvent], None]:
    """A listener that kills the run when its ``units``-th unit has committed (before the
    journal holds it: the worst moment)."""
    copied = 0

    def listener(event: MigrationEvent) -> None:
        nonlocal copied
        if isinstance(event, UnitCopied):
            copied += 1
            if copied == units:
                raise Killed

    return listener


def ends_of(direction: str, places: tuple[Place, ...]) -> tuple[Place, Place]:
    """(source, target) of a run ``direction``: "to sqlite" starts from PostgreSQL, which
    gets the folder's data first."""
    source, postgres, back = places
    if direction == "to sqlite":
        run(source, postgres)
        return postgres, back
    return source, postgres


class TestResume:
    @pytest.mark.parametrize("direction", ["to postgresql", "to sqlite"])
    def test_a_killed_run_resumes_to_the_same_result(
        self, direction: str, folder: Folder, places: tuple[Place, ...], tmp_path: Path
    ):
        source, target = ends_of(direction, places)
        with pytest.raises(Killed):
            run(source, target, kill_after(5))
        resumed = run(source, target)
        assert resumed.units_already_finished == 4  # the fifth committed, was not journaled
        assert contents(target, folder, tmp_path / "t") == contents(source, folder, tmp_path / "s")

    @pytest.mark.parametrize("direction", ["to postgresql", "to sqlite"])
    def test_a_run_killed_mid_projects_resumes_to_the_same_result(
        self, direction: str, folder: Folder, places: tuple[Place, ...], tmp_path: Path
    ):
        """Killed while a directory's projects are half indexed: its chat index and agents
        committed, its journal line never written; the rerun redoes that directory whole."""
        source, target = ends_of(direction, places)
        with kill_mid_projects(), pytest.raises(Killed):
            run(source, target)
        resumed = run(source, target)
        # accounts, settings, sharing, then the guest's directory and chat (listed first):
        assert resumed.units_already_finished == 5
        assert resumed.people == 1  # the admin's directory, redone from nothing
        assert contents(target, folder, tmp_path / "t") == contents(source, folder, tmp_path / "s")

    def test_a_second_run_changes_nothing_and_says_so(self, places: tuple[Place, ...]):
        source, postgres, back = places
        run(source, postgres)
        run(postgres, back)
        files = {p: p.stat().st_mtime_ns for p in back.root.rglob("*") if p.is_file()}
        again = run(postgres, back)
        assert again.already_complete and again.units_copied == 0
        assert {p: p.stat().st_mtime_ns for p in back.root.rglob("*") if p.is_file()} == files
        assert run(source, postgres).already_complete


class TestProjects:
    def test_projects_come_along_both_ways_and_keep_working(
        self, folder: Folder, places: tuple[Place, ...]
    ):
        source, postgres, back = places
        run(source, postgres)
        run(postgres, back)
        admin = folder.people["root-admin"]
        for place in places:
            with engine(place.storage), Chats(place.root, admin) as chats:
                projects = Projects(chats)
                [project] = projects.list_projects()
                assert (project.id, project.name, project.instructions) == (
                    folder.project_id,
                    "Boathouse",
                    "Answer as the boathouse keeper.",
                )
                members = {s.id for s in projects.chats_of(project.id)}
                [pinned] = chats.pins.pinned()
                assert members == {folder.chat_id, pinned.id}
                loose = {s.id for s in chats.list_chats()} - set(projects.memberships())
                assert folder.odd_chat_id in loose and len(loose) >= 4
                [file] = projects.files.list_files(project.id)
                assert (file.name, file.size) == ("boathouse.md", len(BOATHOUSE_NOTES))
                text = "\n\n".join(projects.files.text_of(file.id))
                assert text.encode() == BOATHOUSE_NOTES  # the text as extracted, whole
                memory = projects.memory(project.id)
                assert memory.startswith("The keeper is Ada.\n") and "locks up at six" in memory
                hits = projects.files.search(project.id, "rack 17")
                assert hits and hits[0].file_id == file.id and "rack 17" in hits[0].text
                added = projects.add_file(project.id, "more.md", "text/markdown", b"Rack 99.")
                assert projects.files.search(project.id, "99")[0].file_id == added.id
                restored = projects.restore(folder.old_project_id)  # the undo survived too
                assert [s.title for s in projects.chats_of(restored.id)] == ["Old trip"]


class TestRefusals:
    def test_a_postgresql_database_holding_accounts_is_refused_untouched(
        self, places: tuple[Place, ...]
    ):
        source, postgres, _ = places
        with Accounts(settings_for(source.root / "x", postgres.storage)) as accounts:
            accounts.create_user(CONSOLE_ACTOR, "someone", PASSWORD, role="admin")
        with pytest.raises(MigrationRefused, match="already holds data"):
            run(source, postgres)
        side = postgres.side()
        try:
            assert side.directory_ids() == []
            assert not side.has_journal()
        finally:
            side.close()

    def test_a_folder_holding_a_directory_is_refused_untouched(
        self, places: tuple[Place, ...], tmp_path: Path
    ):
        source, postgres, back = places
        run(source, postgres)
        with Chats(back.root, "someone") as chats:
            chats.create_chat("Mine")
        before = sorted(p.name for p in back.root.rglob("*"))
        with pytest.raises(MigrationRefused, match="already holds data"):
            run(postgres, back)
        assert sorted(p.name for p in back.root.rglob("*")) == before

    def test_a_journal_of_another_source_is_refused(
        self, folder: Folder, places: tuple[Place, ...], tmp_path: Path
    ):
        source, postgres, _ = places
        run(source, postgres)
        other = Place("", tmp_path / "other")
        shutil.copytree(folder.data_dir, other.root)
        with pytest.raises(MigrationRefused, match="holds a migration from"):
            run(other, postgres)

    def test_both_ends_on_one_engine_are_refused(self, places: tuple[Place, ...]):
        source, _, back = places
        with pytest.raises(MigrationRefused, match="both ends are sqlite"):
            run(source, back)


PACKAGES = (
    accounts_migration,
    endpoints_migration,
    sharing_migration,
    chats_migration,
    agents_migration,
    sessions_migration,
    runtime_migration,
    projects_migration,
)
COPIED = {table.name: table for package in PACKAGES for table in package.TABLES}
REBUILT = {name for package in PACKAGES for name in getattr(package, "REBUILT", ())}
ENGINE_OWN_COLUMNS = {("failed_attempts", "id")}  # PostgreSQL's number (accounts/migration.py)
BOOKKEEPING = {"_scopes", "_migrations", "migration_journal", "sqlite_sequence"}


def accounted(tables: dict[str, list[str]], engine_kind: str) -> list[str]:
    """What of ``tables`` (name → columns) no package copies nor rebuilds, as sentences."""
    missing = []
    for name, columns in tables.items():
        if name in BOOKKEEPING or name in REBUILT:
            continue
        if name.rsplit("_", 1)[0] in REBUILT:  # an FTS5 table's shadow tables
            continue
        table = COPIED.get(name)
        if table is None:
            missing.append(f"{engine_kind}: table {name} is neither copied nor rebuilt")
            continue
        own = {"scope"} if table.per_scope and engine_kind == "postgresql" else set()
        own |= {column for t, column in ENGINE_OWN_COLUMNS if t == name}
        if set(columns) - own != set(table.columns):
            missing.append(f"{engine_kind}: {name} has {columns}, copies {table.columns}")
    return missing


class TestEveryTable:
    """A column or table added later without a line in its package's migration module would
    be lost by a migration: both engines' real schemas are read and compared."""

    def test_every_table_and_column_of_both_engines_is_copied_or_rebuilt(
        self, places: tuple[Place, ...]
    ):
        source, postgres, _ = places
        run(source, postgres)
        sqlite_tables: dict[str, list[str]] = {}
        for path in source.root.rglob("*.sqlite"):
            database = Database(path)
            try:
                for row in database.query("SELECT name FROM sqlite_master WHERE type = 'table'"):
                    sqlite_tables[row[0]] = column_names(database, row[0])
            finally:
                database.close()
        side = postgres.side()
        assert isinstance(side, PostgresSide)
        try:
            scope = side.open_journal()
            rows = scope.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
            postgres_tables = {row[0]: column_names(scope, row[0]) for row in rows}
            scope.close()
        finally:
            side.close()
        assert set(COPIED) <= set(sqlite_tables) & set(postgres_tables)
        assert accounted(sqlite_tables, "sqlite") + accounted(postgres_tables, "postgresql") == []
