"""``chats users add|list|disable|reset-password``: what an operator types on the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

from backend.chats import Chats as Directory
from backend.cli import cli
from tests.cli.conftest import PASSWORD
from tests.conftest import ROOT
from tests.support.deadlines import CHILD_START_S

NEW_PASSWORD = "a brand new passphrase"


class TestAdd:
    def test_adding_a_user_with_a_prompted_password(self, chats):
        result = chats("users", "add", "Alice", input=f"{PASSWORD}\n{PASSWORD}\n")
        assert result.exit_code == 0, result.output
        assert "Created user alice" in result.output
        assert PASSWORD not in result.output
        with chats.accounts() as accounts:
            assert accounts.sign_in("alice", PASSWORD, "127.0.0.1").user.role == "user"

    def test_a_prompted_password_must_be_typed_the_same_twice(self, chats):
        result = chats("users", "add", "alice", input=f"{PASSWORD}\nsomething else\n")
        assert result.exit_code != 0
        with chats.accounts() as accounts:
            assert accounts.user_by_username("alice") is None

    def test_adding_an_admin_on_a_fresh_install_ends_setup_and_adopts_the_old_chats(
        self, chats, data_dir
    ):
        with Directory(data_dir, "local") as directory:
            directory.create_chat(title="From before")
        result = chats.add("owner", "--admin")
        assert result.exit_code == 0, result.output
        assert "Created admin owner (directory id local)" in result.output
        with chats.accounts() as accounts:
            assert not accounts.needs_setup()
            assert accounts.setup_code_for_console() is None

    def test_a_password_is_never_taken_from_the_command_line(self, chats):
        result = chats("users", "add", "alice", "--password", PASSWORD)
        assert result.exit_code == 2
        assert "No such option" in result.stderr

    def test_an_empty_standard_input_is_bad_usage(self, chats):
        result = chats("users", "add", "alice", "--password-stdin", input="")
        assert result.exit_code == 2
        assert "holds no password" in result.stderr

    def test_a_weak_password_is_bad_usage_and_says_the_rule(self, chats):
        result = chats("users", "add", "alice", "--password-stdin", input="short\n")
        assert result.exit_code == 2
        assert "at least" in result.stderr

    def test_a_taken_username_is_refused_with_status_1(self, chats):
        chats.add("alice")
        result = chats.add("ALICE")
        assert result.exit_code == 1
        assert "chats: ALICE: The username 'alice' is taken." in result.stderr


class TestList:
    def test_list_prints_one_account_per_line(self, chats):
        chats.add("owner", "--admin")
        chats.add("alice")
        lines = chats("users", "list").output.splitlines()
        assert [line.split("\t")[:3] for line in lines] == [
            ["alice", "user", "active"],
            ["owner", "admin", "active"],
        ]

    def test_list_json_is_an_array_of_accounts_without_secrets(self, chats):
        chats.add("alice")
        result = chats("users", "list", "--json")
        assert result.exit_code == 0
        [account] = json.loads(result.output)
        assert account["username"] == "alice"
        assert set(account) == {
            "id",
            "username",
            "role",
            "disabled",
            "has_password",
            "created_at",
            "updated_at",
            "password_changed_at",
        }

    def test_an_empty_install_lists_nothing(self, chats):
        result = chats("users", "list", "--json")
        assert (result.exit_code, json.loads(result.output)) == (0, [])


class TestDisable:
    def test_disabling_ends_the_users_sessions(self, chats):
        chats.add("owner", "--admin")
        chats.add("alice")
        with chats.accounts() as accounts:
            token = accounts.sign_in("alice", PASSWORD, "127.0.0.1").token
            result = chats("users", "disable", "alice")
            assert result.exit_code == 0
            assert accounts.resolve(token) is None

    def test_some_unknown_names_give_a_partial_result_naming_each(self, chats):
        chats.add("owner", "--admin")
        chats.add("alice")
        result = chats("users", "disable", "ghost", "alice", "nobody")
        assert result.exit_code == 1
        assert "chats: ghost: user 'ghost' not found" in result.stderr
        assert "chats: nobody:" in result.stderr
        assert "Disabled alice." in result.output
        assert "alice\tuser\tdisabled" in chats("users", "list").output

    def test_the_last_admin_cannot_be_disabled(self, chats):
        chats.add("owner", "--admin")
        result = chats("users", "disable", "owner")
        assert result.exit_code == 1
        assert "last active admin" in result.stderr

    def test_disable_without_a_name_is_bad_usage(self, chats):
        assert chats("users", "disable").exit_code == 2


class TestResetPassword:
    def test_a_reset_sets_the_new_password_and_ends_sessions(self, chats):
        chats.add("alice")
        with chats.accounts() as accounts:
            token = accounts.sign_in("alice", PASSWORD, "127.0.0.1").token
            result = chats(
                "users", "reset-password", "alice", "--password-stdin", input=NEW_PASSWORD + "\n"
            )
            assert result.exit_code == 0, result.output
            assert accounts.resolve(token) is None
            assert accounts.sign_in("alice", NEW_PASSWORD, "127.0.0.1")

    def test_an_unknown_user_is_refused_before_asking_for_a_password(self, chats):
        result = chats("users", "reset-password", "ghost")
        assert result.exit_code == 1
        assert "Password" not in result.output


class TestDataDir:
    def test_the_data_dir_option_overrides_CHATS_DATA_DIR(self, chats, tmp_path):
        elsewhere = tmp_path / "elsewhere"
        result = chats(
            "--data-dir",
            str(elsewhere),
            "users",
            "add",
            "alice",
            "--password-stdin",
            input=PASSWORD + "\n",
        )
        assert result.exit_code == 0
        assert (elsewhere / "accounts.sqlite").exists()
        assert not (chats.data_dir / "accounts.sqlite").exists()

    def test_a_malformed_setting_in_the_environment_is_bad_usage(self, chats):
        result = chats.runner.invoke(cli, ["users", "list"], env={"CHATS_AUTH": "sometimes"})
        assert result.exit_code == 2
        assert "CHATS_AUTH must be one of" in result.stderr


class TestConsoleScript:
    def test_the_package_declares_the_chats_console_script(self):
        assert console_script() == "backend.cli:main"

    def test_the_console_script_runs_as_a_real_process(self, data_dir):
        # What the installed `chats` wrapper does: import the entry point and exit with it.
        # (The shared development install predates the script, so it is run this way.)
        module, function = console_script().split(":")
        wrapper = f"import sys; from {module} import {function}; sys.exit({function}())"
        env = {
            **os.environ,
            "CHATS_DATA_DIR": str(data_dir),
            "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
        }
        added = subprocess.run(
            [sys.executable, "-c", wrapper, "users", "add", "alice", "--password-stdin"],
            input=PASSWORD + "\n",
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=CHILD_START_S,
        )
        assert added.returncode == 0, added.stderr
        listed = subprocess.run(
            [sys.executable, "-c", wrapper, "users", "list", "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=CHILD_START_S,
        )
        assert [user["username"] for user in json.loads(listed.stdout)] == ["alice"]
        bad = subprocess.run(
            [sys.executable, "-c", wrapper, "users", "frobnicate"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=CHILD_START_S,
        )
        assert bad.returncode == 2


def console_script() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return project["project"]["scripts"]["chats"]
