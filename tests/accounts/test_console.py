"""What the run command checks and prints before serving (``backend.accounts.console``)."""

from __future__ import annotations

import os
import subprocess
import sys

from backend.accounts import Accounts
from backend.config import Settings
from tests.conftest import ROOT
from tests.support.deadlines import CHILD_START_S


def run_console(tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("CHATS_")}
    child_env.update(
        CHATS_DATA_DIR=str(tmp_path / "data"), CHATS_PASSWORD_HASH_PROFILE="cheapest", **env
    )
    return subprocess.run(
        [sys.executable, "-m", "backend.accounts.console"],
        cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=CHILD_START_S, check=False,
    )  # fmt: skip


class TestNoSignInModeListensOnLoopbackOnly:
    def test_none_mode_on_every_interface_is_refused_and_says_why(self, tmp_path):
        result = run_console(tmp_path, CHATS_AUTH="none", CHATS_LISTEN_HOST="0.0.0.0")
        assert result.returncode == 2
        assert "loopback" in result.stderr and "'0.0.0.0'" in result.stderr
        assert result.stdout == ""

    def test_none_mode_is_refused_by_default_because_the_default_is_every_interface(self, tmp_path):
        assert run_console(tmp_path, CHATS_AUTH="none").returncode == 2

    def test_none_mode_on_loopback_starts_and_names_the_host(self, tmp_path):
        result = run_console(tmp_path, CHATS_AUTH="none", CHATS_LISTEN_HOST="127.0.0.1")
        assert result.returncode == 0
        assert result.stdout.strip() == "127.0.0.1"


class TestAFreshInstallPrintsItsSetupCode:
    def test_the_code_printed_is_the_one_the_setup_form_accepts(self, tmp_path):
        result = run_console(tmp_path)
        assert result.returncode == 0
        printed = result.stderr.split("setup code", 1)[1].split()[0]
        settings = Settings.from_env(
            {"CHATS_DATA_DIR": str(tmp_path / "data"), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
        )
        accounts = Accounts(settings)
        try:
            admin = accounts.create_first_admin(printed, "owner", "a long enough password")
            assert admin.user.is_admin
        finally:
            accounts.close()
        assert "setup code" not in run_console(tmp_path).stderr  # once set up, no code

    def test_header_mode_without_its_header_is_refused(self, tmp_path):
        result = run_console(tmp_path, CHATS_AUTH="header")
        assert result.returncode == 2
        assert "CHATS_AUTH_HEADER" in result.stderr
