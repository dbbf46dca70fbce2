"""``CHATS_STORAGE``: sqlite by default or a PostgreSQL URL, clear errors, and a password that
never shows: not in a repr, an error, a log line, or the message of an unreachable server."""

from __future__ import annotations

import logging

import pytest

from backend.config import PostgresLocation, Settings, parse_storage, redact_url
from backend.storage.engines import PostgresStorage, SqliteStorage, open_storage
from backend.storage.postgres import (
    MIN_SERVER_VERSION,
    PostgresEngine,
    StorageUnavailableError,
    UnsupportedServerError,
)
from backend.storage.postgres.errors import check_server_version
from tests.support.postgres_server import free_port

SECRET = "s3cr%40t-horse"  # percent-encoded "@" in the URL: "s3cr@t-horse" to the driver
URL = f"postgresql://chats:{SECRET}@db.example:6543/chats_prod?sslmode=require"


class TestParsing:
    @pytest.mark.parametrize("raw", ["", "  ", "sqlite", "SQLite "])
    def test_unset_or_sqlite_is_the_embedded_engine(self, raw):
        assert parse_storage(raw) == "sqlite"
        assert Settings.from_env({"CHATS_STORAGE": raw}).storage == "sqlite"

    def test_a_url_names_host_port_database_and_user(self):
        location = parse_storage(URL)
        assert isinstance(location, PostgresLocation)
        assert (location.host, location.port, location.database, location.user) == (
            "db.example",
            6543,
            "chats_prod",
            "chats",
        )
        assert location.url == URL  # handed to the driver as given
        assert location.describe() == 'database "chats_prod" on db.example:6543'

    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            ("mysql://u:hunter2@h/db", "must be sqlite or a postgresql://"),
            ("postgresql://u:hunter2@h:port/db", "port .* is not a number"),
            ("postgresql://u:hunter2@h/", "must name one database"),
            ("postgresql://u:hunter2@h/a/b", "must name one database"),
            ("files", "must be sqlite or a postgresql://"),
        ],
    )
    def test_anything_else_is_a_clear_error_without_the_password(self, raw, message):
        with pytest.raises(ValueError, match=message) as caught:
            Settings.from_env({"CHATS_STORAGE": raw})
        assert "hunter2" not in str(caught.value)


class TestThePasswordNeverShows:
    def test_not_in_the_settings_repr_or_the_location_str(self):
        settings = Settings.from_env({"CHATS_STORAGE": URL})
        for shown in (repr(settings), str(settings), repr(settings.storage), str(settings.storage)):
            assert "s3cr" not in shown
            assert "postgresql://chats:***@db.example:6543/chats_prod" in shown

    def test_not_in_a_password_query_parameter(self):
        shown = redact_url("postgresql://h/db?user=u&password=hunter2&sslmode=require")
        assert shown == "postgresql://h/db?user=u&password=***&sslmode=require"

    def test_not_in_a_log_line_that_formats_the_settings(self, caplog):
        settings = Settings.from_env({"CHATS_STORAGE": URL})
        with caplog.at_level(logging.INFO):
            logging.getLogger("chats.test").info("on %s / %r", settings.storage, settings)
        assert "s3cr" not in caplog.text and "***" in caplog.text

    def test_not_in_the_error_of_an_unreachable_server(self):
        port = free_port()  # nothing listens there
        url = f"postgresql://chats:{SECRET}@127.0.0.1:{port}/chats_prod?connect_timeout=3"
        with pytest.raises(StorageUnavailableError) as caught:
            open_storage(Settings.from_env({"CHATS_STORAGE": url}))
        message = str(caught.value)
        assert f'database "chats_prod" on 127.0.0.1:{port}' in message
        assert "storage unavailable" in message
        assert "s3cr" not in message and "s3cr" not in repr(caught.value.__cause__ or "")

    def test_not_in_the_error_of_a_wrong_password(self, postgres_url):
        location = parse_storage(postgres_url)
        assert isinstance(location, PostgresLocation)
        wrong = postgres_url.replace("@", "x-wrong-pw@", 1)
        with pytest.raises(StorageUnavailableError, match="password authentication") as caught:
            PostgresEngine(parse_storage(wrong))  # type: ignore[arg-type]
        assert "x-wrong-pw" not in str(caught.value)


class TestServerVersion:
    def test_a_server_older_than_the_minimum_is_refused_naming_its_version(self):
        location = parse_storage(URL)
        assert isinstance(location, PostgresLocation)
        with pytest.raises(UnsupportedServerError, match=r"PostgreSQL 13\.4 .*needs PostgreSQL 14"):
            check_server_version(130004, location)
        check_server_version(MIN_SERVER_VERSION * 10_000, location)

    def test_the_test_server_is_supported(self, postgres_url):
        engine = PostgresEngine(parse_storage(postgres_url))  # type: ignore[arg-type]
        engine.close()


class TestTheEngineObject:
    def test_sqlite_scopes_are_files_under_the_data_folder(self, tmp_path):
        storage = open_storage(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
        assert isinstance(storage, SqliteStorage) and storage.kind == "sqlite"
        scope = storage.open_scope("things")
        scope.close()
        assert (tmp_path / "things.sqlite").exists()

    def test_postgresql_storages_on_one_url_share_a_pool_until_the_last_closes(self, postgres_url):
        settings = Settings.from_env({"CHATS_STORAGE": postgres_url})
        first, second = open_storage(settings), open_storage(settings)
        assert isinstance(first, PostgresStorage) and isinstance(second, PostgresStorage)
        assert first.engine is second.engine and first.kind == "postgresql"
        first.close()
        first.close()  # twice is once
        assert not second.engine.closed
        second.close()
        assert second.engine.closed
