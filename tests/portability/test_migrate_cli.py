"""``chats migrate`` as a person runs it: progress on stderr, the report on stdout, clear
refusals, a URL's password never printed, and a person's projects listed alike on each end."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner, Result

from backend.accounts import ACCOUNTS_FILE, CONSOLE_ACTOR, Accounts
from backend.chats import Chats
from backend.cli import cli
from backend.cli.migrate import APP_ROOT
from backend.projects import Projects
from tests.portability.folders import PASSWORD, engine, settings_for

LARGE_CHAT = 5_000
WRONG_PASSWORD = "not-the-password-0451"


NOTES = "\n\n".join(f"Rack {n} holds the blue paddles and two spare oars." for n in range(60))


def chats_command(data_dir: Path, *args: str, storage: str = "") -> Result:
    env = {"CHATS_DATA_DIR": str(data_dir), "CHATS_STORAGE": storage}
    return CliRunner(env=env).invoke(cli, list(args), prog_name="chats")


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{password}@{parts.hostname}{port}"))


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder whose one person has one chat of :data:`LARGE_CHAT` messages."""
    data_dir = tmp_path_factory.mktemp("large") / "data"
    with engine(""), Chats(data_dir, "paddler") as chats:
        chat = chats.create_chat("Long river")
        session = chats.get_chat(chat.id).session
        for n in range(LARGE_CHAT):
            role = "user" if n % 2 == 0 else "assistant"
            text = f"stroke {n} of the long river"
            session.append_message(
                {"id": f"m{n}", "role": role, "parts": [{"type": "text", "text": text}]}
            )
    return data_dir, chat.id


@pytest.fixture(scope="module")
def keeper(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder whose one person, ``keeper``, has a project holding a pinned chat and another,
    with instructions, a file and memory, beside a loose chat; and keeper's id."""
    data_dir = tmp_path_factory.mktemp("keeper") / "data"
    with engine(""), Accounts(settings_for(data_dir)) as accounts:
        user = accounts.create_user(CONSOLE_ACTOR, "keeper", PASSWORD, role="admin")
    with engine(""), Chats(data_dir, user.id) as chats:
        inside = chats.create_chat("Rigging")
        pinned = chats.create_chat("Paddle plan")
        chats.pins.pin(pinned.id)
        chats.create_chat("Loose notes")
        projects = Projects(chats)
        project = projects.create("Boathouse", instructions="Answer as the keeper.")
        projects.move_chat(inside.id, project.id)
        projects.move_chat(pinned.id, project.id)
        projects.add_file(project.id, "racks.md", "text/markdown", NOTES.encode())
        projects.set_memory(project.id, "Ada keeps the keys.\n")
    return data_dir, user.id


def seen_by_the_command(data_dir: Path, user_id: str, storage: str = "") -> dict[str, object]:
    """``chats projects list`` and ``chats list`` of keeper, then what the projects service
    adds (memory, the files' text) on the same engine."""
    found: dict[str, object] = {}
    for name, args in (("projects", ("projects", "list")), ("chats", ("list",))):
        result = chats_command(data_dir, *args, "--user", "keeper", "--json", storage=storage)
        assert result.exit_code == 0, result.output
        found[name] = json.loads(result.stdout)
    root = APP_ROOT if storage else data_dir
    with engine(storage), Chats(root, user_id) as chats:
        projects = Projects(chats)
        for project in projects.list_projects():
            files = projects.files.list_files(project.id)
            found[project.id] = (
                projects.memory(project.id),
                [(f.size, "\n\n".join(projects.files.text_of(f.id))) for f in files],
            )
    return found


class TestCommand:
    def test_a_large_chat_reports_its_progress_and_the_run_its_totals(
        self, large: tuple[Path, str], postgres_url: str
    ):
        data_dir, chat_id = large
        result = chats_command(data_dir, "migrate", "--to", postgres_url)
        assert result.exit_code == 0, result.output
        assert "person 1/1 paddler: 1 chat(s)" in result.stderr
        assert f"chat 1/1 {chat_id}.g1.sqlite: {LARGE_CHAT:,} message(s)" in result.stderr
        assert f"Migrated 1 person(s), 1 chat(s), {LARGE_CHAT:,} message(s)" in result.stdout

    def test_the_way_back_then_a_second_run_that_changes_nothing(
        self, large: tuple[Path, str], postgres_url: str, tmp_path: Path
    ):
        data_dir, chat_id = large
        assert chats_command(data_dir, "migrate", "--to", postgres_url).exit_code == 0
        back = tmp_path / "back"
        home = chats_command(data_dir, "migrate", "--from", postgres_url, "--to", str(back))
        assert home.exit_code == 0, home.output
        again = chats_command(data_dir, "migrate", "--from", postgres_url, "--to", str(back))
        assert again.exit_code == 0
        assert again.stdout.startswith("Nothing to do:") and again.stderr == ""
        with engine(""), Chats(back, "paddler") as chats:
            history = chats.get_chat(chat_id).session.get_history()
        assert [m["id"] for m in history] == [f"m{n}" for n in range(LARGE_CHAT)]
        # A folder without accounts comes back without them: ``--user`` names the directory.
        assert not (back / ACCOUNTS_FILE).exists()
        listed = chats_command(back, "list", "--user", "paddler", "--json")
        assert listed.exit_code == 0, listed.output
        assert [c["id"] for c in json.loads(listed.stdout)] == [chat_id]

    def test_a_refused_target_is_named_and_exits_non_zero(
        self, large: tuple[Path, str], tmp_path: Path
    ):
        data_dir, _ = large
        result = chats_command(data_dir, "migrate", "--to", str(tmp_path / "elsewhere"))
        assert result.exit_code == 2
        assert "both ends are sqlite" in result.stderr

    def test_the_password_of_a_url_is_never_printed(
        self, large: tuple[Path, str], postgres_url: str, tmp_path: Path
    ):
        data_dir, _ = large
        password = urlsplit(postgres_url).password
        assert password
        done = chats_command(data_dir, "migrate", "--to", postgres_url)
        wrong = with_password(postgres_url, WRONG_PASSWORD)
        refused = chats_command(data_dir, "migrate", "--to", wrong)
        bad = chats_command(data_dir, "migrate", "--to", postgres_url.replace("postgresql", "pg"))
        assert (done.exit_code, refused.exit_code, bad.exit_code) == (0, 1, 2)
        assert "chats_test" in refused.stderr  # the server is named...
        for result in (done, refused, bad):
            for secret in (password, WRONG_PASSWORD):
                assert secret not in result.output + result.stderr  # ...never its password

    def test_a_persons_projects_read_the_same_on_postgresql_and_back(
        self, keeper: tuple[Path, str], postgres_url: str, tmp_path: Path
    ):
        data_dir, user_id = keeper
        before = seen_by_the_command(data_dir, user_id)
        there = chats_command(data_dir, "migrate", "--to", postgres_url)
        assert there.exit_code == 0, there.output
        back = tmp_path / "back"
        home = chats_command(data_dir, "migrate", "--from", postgres_url, "--to", str(back))
        assert home.exit_code == 0, home.output
        assert seen_by_the_command(data_dir, user_id, postgres_url) == before
        assert seen_by_the_command(back, user_id) == before
        [project] = before["projects"]  # type: ignore[misc]
        assert (project["name"], project["instructions"]) == ("Boathouse", "Answer as the keeper.")
        assert len(project["chats"]) == 2 and project["files"] == ["racks.md"]
        assert before[project["id"]] == ("Ada keeps the keys.\n", [(len(NOTES), NOTES)])
        assert [c["title"] for c in before["chats"] if c["pinned_at"]] == ["Paddle plan"]
