"""Chat ids are minted here, bound to this directory, and safe to turn into file names."""

import pytest

from backend.chats.ids import (
    CHAT_ID_PATTERN,
    ChatIds,
    new_id_key,
    validate_directory_id,
)
from backend.chats.layout import DirectoryLayout
from backend.errors import InvalidIdError

HOSTILE_IDS = [
    "../x",
    "..",
    ".",
    "/etc/passwd",
    "a/b",
    "a\\b",
    "abc\x00def",
    "",
    " ",
    "ABCDEFGHJKMNPQRS-ABCDEF",
    "0000000000000000-000000/../../x",
    None,
    42,
    b"0000000000000000-000000",
]


@pytest.fixture
def ids():
    return ChatIds(new_id_key())


class TestMinting:
    def test_a_minted_id_has_the_documented_shape_and_validates(self, ids):
        chat_id = ids.mint()
        assert CHAT_ID_PATTERN.fullmatch(chat_id)
        assert ids.validate(chat_id) == chat_id

    def test_minted_ids_do_not_repeat(self, ids):
        assert len({ids.mint() for _ in range(2000)}) == 2000


class TestValidation:
    @pytest.mark.parametrize("value", HOSTILE_IDS)
    def test_a_hostile_or_malformed_id_is_a_value_error(self, ids, value):
        with pytest.raises(ValueError):
            ids.validate(value)

    def test_the_error_is_the_project_invalid_id_error_with_the_value(self, ids):
        with pytest.raises(InvalidIdError) as info:
            ids.validate("../x")
        assert info.value.value == "../x"
        assert "path separator" in str(info.value)

    def test_an_id_minted_by_another_directory_is_rejected(self, ids):
        foreign = ChatIds(new_id_key()).mint()
        with pytest.raises(InvalidIdError, match="not issued by this directory"):
            ids.validate(foreign)

    def test_a_well_shaped_id_with_a_forged_tag_is_rejected(self, ids):
        body = ids.mint().split("-")[0]
        with pytest.raises(InvalidIdError):
            ids.validate(f"{body}-000000")

    def test_a_short_key_is_refused(self):
        with pytest.raises(ValueError):
            ChatIds(b"short")


class TestDirectoryIds:
    @pytest.mark.parametrize("value", ["local", "alice@example.com", "user_1", "a.b-c+d"])
    def test_ordinary_user_ids_are_accepted(self, value):
        assert validate_directory_id(value) == value

    @pytest.mark.parametrize("value", ["", "..", "../x", "a/b", ".hidden", "a..b", "a\x00", 7])
    def test_anything_that_is_not_one_safe_path_segment_is_rejected(self, value):
        with pytest.raises(InvalidIdError):
            validate_directory_id(value)

    @pytest.mark.parametrize(
        "value", ["CON", "con", "Nul", "aux.txt", "PRN.tar.gz", "COM1", "lpt9.log", "com0"]
    )
    def test_a_name_windows_reserves_for_a_device_is_rejected(self, value):
        with pytest.raises(InvalidIdError, match="reserved"):
            validate_directory_id(value)

    @pytest.mark.parametrize("value", ["alice.", "a.b."])
    def test_a_trailing_dot_is_rejected_because_windows_drops_it(self, value):
        with pytest.raises(InvalidIdError, match="end with"):
            validate_directory_id(value)

    @pytest.mark.parametrize("value", ["console", "con-man", "com10", "lpt", "nullable", "a.con"])
    def test_names_that_only_resemble_devices_are_accepted(self, value):
        assert validate_directory_id(value) == value


class TestLayout:
    def test_files_live_under_root_directory_id(self, tmp_path):
        layout = DirectoryLayout(tmp_path, "alice")
        assert layout.database_path == tmp_path / "alice" / "directory.sqlite"
        path = layout.chat_path("0000000000000000-000000", 3)
        assert path == tmp_path / "alice" / "chats" / "0000000000000000-000000.g3.sqlite"

    def test_a_path_that_would_escape_the_chats_folder_is_refused(self, tmp_path):
        layout = DirectoryLayout(tmp_path, "alice")
        layout.ensure_folders()
        with pytest.raises(InvalidIdError):
            layout.chat_path("../../etc/x", 1)

    @pytest.mark.sqlite_only
    def test_removing_a_chat_removes_its_side_files_and_nothing_else(self, tmp_path):
        layout = DirectoryLayout(tmp_path, "alice")
        layout.ensure_folders()
        path = layout.chat_path("0000000000000000-000000", 1)
        other = layout.chat_path("0000000000000000-000000", 2)
        for name in (str(path), f"{path}-wal", f"{path}-shm", str(other)):
            open(name, "w").close()
        assert layout.remove_chat_files("0000000000000000-000000", 1) == 3
        assert not path.exists()
        assert other.exists()
        assert layout.remove_chat_files("0000000000000000-000000", 1) == 0

    def test_off_disk_a_layout_names_the_same_paths_and_touches_nothing(self, tmp_path):
        """On PostgreSQL the paths only name scopes: no folder is made, no name resolved."""
        root = tmp_path / "nowhere"
        layout = DirectoryLayout(root, "alice", on_disk=False)
        layout.ensure_folders()
        assert not root.exists()
        on_disk = DirectoryLayout(tmp_path, "alice").chat_path("0000000000000000-000000", 3)
        assert layout.chat_path("0000000000000000-000000", 3).name == on_disk.name
        with pytest.raises(InvalidIdError):
            layout.chat_path("../../etc/x", 1)
        assert not root.exists()
