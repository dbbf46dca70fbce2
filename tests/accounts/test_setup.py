"""The first admin: a one-time code from the server console, and the former local user's
chats kept by adoption."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR, MAX_FAILURES_PER_ADDRESS, Accounts, SignedIn
from backend.accounts import tokens as tokens_module
from backend.chats import Chats
from backend.config import PostgresLocation
from backend.data_folder import SETUP_CODE_FILE
from backend.errors import InvalidSetupCodeError, ThrottledError
from tests.accounts.conftest import ADDRESS, PASSWORD, make_settings, raw_rows


def setup_code_after_wrong_guesses_up_to_the_limit(accounts: Accounts) -> str | None:
    """The console's setup code, once ``ADDRESS`` has made as many wrong guesses as it may."""
    code = accounts.setup_code_for_console()
    for _ in range(MAX_FAILURES_PER_ADDRESS):
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin("0000-0000-0000", "racer", PASSWORD, ADDRESS)
    return code


class TestSetupCode:
    def test_a_fresh_install_needs_setup_and_prints_a_readable_code(self, accounts):
        assert accounts.needs_setup()
        code = accounts.setup_code_for_console()
        assert code is not None
        assert len(code.replace("-", "")) == 12

    def test_the_right_code_makes_the_first_admin_and_signs_them_in(self, accounts):
        code = accounts.setup_code_for_console()
        signed_in = accounts.create_first_admin(code, "Owner", PASSWORD, ADDRESS)
        assert isinstance(signed_in, SignedIn)
        assert signed_in.user.role == "admin"
        assert signed_in.user.username == "owner"
        assert accounts.resolve(signed_in.token) == signed_in.user
        assert not accounts.needs_setup()

    def test_the_code_works_only_once(self, accounts):
        code = accounts.setup_code_for_console()
        accounts.create_first_admin(code, "owner", PASSWORD)
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin(code, "intruder", PASSWORD)
        assert accounts.user_by_username("intruder") is None

    def test_once_set_up_the_console_gets_no_code(self, accounts):
        accounts.create_first_admin(accounts.setup_code_for_console(), "owner", PASSWORD)
        assert accounts.setup_code_for_console() is None

    def test_a_wrong_code_is_refused_and_creates_nothing(self, accounts):
        accounts.setup_code_for_console()
        with pytest.raises(InvalidSetupCodeError, match="printed in the console"):
            accounts.create_first_admin("0000-0000-0000", "racer", PASSWORD)
        assert accounts.needs_setup()
        assert accounts.user_by_username("racer") is None

    def test_without_a_printed_code_nobody_can_become_admin(self, accounts):
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin("", "racer", PASSWORD)

    def test_every_worker_prints_the_same_code_until_setup_is_done(self, accounts, settings):
        code = accounts.setup_code_for_console()
        with Accounts(settings) as another_worker:
            assert another_worker.setup_code_for_console() == code
        assert accounts.setup_code_for_console() == code

    def test_the_code_file_is_the_owners_alone_and_goes_away_after_setup(self, accounts, data_dir):
        code = accounts.setup_code_for_console()
        path = data_dir / SETUP_CODE_FILE
        assert path.read_text().strip() == code
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        accounts.create_first_admin(code, "owner", PASSWORD)
        assert not path.exists()

    def test_a_code_file_that_does_not_match_the_stored_hash_is_replaced(self, accounts, data_dir):
        accounts.setup_code_for_console()
        (data_dir / SETUP_CODE_FILE).write_text("aaaa-bbbb-cccc\n")
        code = accounts.setup_code_for_console()
        assert code != "aaaa-bbbb-cccc"
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin("aaaa-bbbb-cccc", "owner", PASSWORD)
        assert accounts.create_first_admin(code, "owner", PASSWORD)

    def test_the_code_is_forgiving_about_case_spaces_and_dashes(self, accounts):
        code = accounts.setup_code_for_console()
        typed = " " + code.replace("-", " ").upper() + " "
        assert accounts.create_first_admin(typed, "owner", PASSWORD)

    def test_only_the_codes_hash_is_stored(self, accounts):
        code = accounts.setup_code_for_console()
        stored = repr(raw_rows(accounts, "SELECT * FROM account_settings"))
        assert code not in stored
        assert code.replace("-", "") not in stored

    def test_the_code_is_compared_in_constant_time(self, accounts, monkeypatch):
        compared = []
        real = tokens_module.hmac.compare_digest

        def spy(a, b):
            compared.append((a, b))
            return real(a, b)

        monkeypatch.setattr(tokens_module.hmac, "compare_digest", spy)
        code = accounts.setup_code_for_console()
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin("wrong-code-here", "owner", PASSWORD)
        accounts.create_first_admin(code, "owner", PASSWORD)
        # The wrong code once; the right one before hashing and again under the write lock.
        assert len(compared) == 3

    def test_setup_code_guesses_are_throttled_per_address(self, accounts):
        code = setup_code_after_wrong_guesses_up_to_the_limit(accounts)
        with pytest.raises(ThrottledError):
            accounts.create_first_admin(code, "owner", PASSWORD, ADDRESS)
        assert accounts.create_first_admin(code, "owner", PASSWORD, "198.51.100.9")

    def test_an_admin_made_on_the_console_ends_setup(self, accounts):
        code = accounts.setup_code_for_console()
        accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert not accounts.needs_setup()
        assert not (accounts.path.parent / SETUP_CODE_FILE).exists()
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin(code, "racer", PASSWORD)


class LegacyDirectories:
    """The single local user's directories as the app left them, on the test's engine: under
    the data folder on SQLite, as scopes under the storage root on PostgreSQL."""

    def __init__(self, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        settings = make_settings(data_dir)
        storage = settings.storage
        monkeypatch.setenv(
            "CHATS_STORAGE", storage.url if isinstance(storage, PostgresLocation) else storage
        )
        self.root = settings.storage_root

    def make(self, user_id: str = "local") -> str:
        """A directory of ``user_id`` with one chat; the chat's id."""
        with Chats(self.root, user_id) as chats:
            return chats.create_chat(title="Before accounts").id

    def chat_ids(self, user_id: str) -> list[str]:
        with Chats(self.root, user_id) as chats:
            return [chat.id for chat in chats.list_chats()]


@pytest.fixture
def legacy(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> LegacyDirectories:
    return LegacyDirectories(data_dir, monkeypatch)


class TestAdoptionOfTheFormerLocalUser:
    """The same rule on both engines: what counts is the directory the engine holds."""

    def test_the_first_admin_gets_the_former_local_directory_and_its_chats(self, accounts, legacy):
        chat_id = legacy.make()
        admin = accounts.create_first_admin(accounts.setup_code_for_console(), "owner", PASSWORD)
        assert admin.user.id == "local"
        assert legacy.chat_ids(admin.user.id) == [chat_id]

    def test_the_former_user_is_whoever_CHATS_USER_named(self, data_dir, clock, legacy):
        legacy.make("family-laptop")
        with Accounts(make_settings(data_dir, user_id="family-laptop"), clock=clock) as accounts:
            admin = accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert admin.id == "family-laptop"

    def test_without_former_data_the_admin_gets_a_fresh_id(self, accounts, data_dir):
        (data_dir / "local").mkdir()  # an empty folder is no data
        admin = accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert admin.id != "local"
        assert admin.id.startswith("owner-")

    def test_someone_else_s_directory_is_not_the_former_user_s(self, accounts, legacy):
        legacy.make("local-2")  # a name that begins like the former user's
        admin = accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert admin.id.startswith("owner-")

    def test_only_the_first_admin_adopts(self, accounts, legacy, admin):
        legacy.make()
        second = accounts.create_user(admin.id, "second", PASSWORD, role="admin")
        assert second.id != "local"

    def test_a_plain_user_made_first_does_not_take_it_from_the_admin(self, accounts, legacy):
        legacy.make()
        user = accounts.create_user(CONSOLE_ACTOR, "early-bird", PASSWORD)
        admin = accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert (user.id, admin.id) != ("local", "local")
        assert admin.id == "local"

    def test_a_former_id_that_cannot_be_a_user_id_is_left_alone(self, data_dir, clock, legacy):
        chat_id = legacy.make("Old_User")
        with Accounts(make_settings(data_dir, user_id="Old_User"), clock=clock) as accounts:
            admin = accounts.create_user(CONSOLE_ACTOR, "owner", PASSWORD, role="admin")
        assert admin.id != "Old_User"
        assert legacy.chat_ids("Old_User") == [chat_id]


class TestSetupHashesOnlyForTheRightCode:
    """Issue 27, hole 4: argon2 ran before the throttle, the code and the state were checked."""

    def test_a_wrong_code_hashes_nothing(self, accounts, hashes):
        accounts.setup_code_for_console()
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin("0000-0000-0000", "racer", PASSWORD, ADDRESS)
        assert hashes == []

    def test_a_post_after_setup_is_done_hashes_nothing(self, accounts, hashes):
        code = accounts.setup_code_for_console()
        accounts.create_first_admin(code, "owner", PASSWORD, ADDRESS)
        assert len(hashes) == 1
        with pytest.raises(InvalidSetupCodeError):
            accounts.create_first_admin(code, "racer", PASSWORD, ADDRESS)
        assert len(hashes) == 1

    def test_a_throttled_address_hashes_nothing(self, accounts, hashes):
        code = setup_code_after_wrong_guesses_up_to_the_limit(accounts)
        with pytest.raises(ThrottledError):
            accounts.create_first_admin(code, "owner", PASSWORD, ADDRESS)
        assert hashes == []
