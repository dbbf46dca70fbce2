"""``chats migrate`` as a person runs it: progress on stderr, the report on stdout, clear
refusals, and a URL's password never printed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner, Result

from backend.chats import Chats
from backend.cli import cli
from tests.portability.test_migrate import engine

LARGE_CHAT = 5_000
WRONG_PASSWORD = "not-the-password-0451"


def chats_command(data_dir: Path, *args: str) -> Result:
    env = {"CHATS_DATA_DIR": str(data_dir), "CHATS_STORAGE": ""}
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
