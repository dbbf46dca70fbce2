"""The sharing package owns its tables on both engines, and exports a small surface."""

from __future__ import annotations

import dataclasses

import psycopg

import backend.sharing
from backend.accounts import Accounts
from backend.config import Settings, parse_storage
from backend.sharing import SHARING_FILE, Sharing
from tests.conftest import ROOT
from tests.support.exports import assert_public_surface
from tests.support.table_ownership import sql_mentions, tables_of

TABLES = {
    "share_chats",
    "share_members",
    "share_events",
    "share_links",
    "share_link_messages",
    "share_link_files",
}


def open_and_close(settings: Settings) -> None:
    with Accounts(settings) as accounts:
        Sharing(settings, accounts).close()


class TestTables:
    def test_only_the_sharing_package_runs_sql_on_its_tables(self, tmp_path):
        open_and_close(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
        assert tables_of(tmp_path / SHARING_FILE) - {"sqlite_sequence"} == TABLES
        assert sql_mentions(TABLES, ROOT / "backend" / "sharing") == []

    def test_the_postgresql_twin_makes_the_same_tables_and_the_feed_counter(
        self, tmp_path, postgres_url
    ):
        settings = Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)})
        open_and_close(dataclasses.replace(settings, storage=parse_storage(postgres_url)))
        with psycopg.connect(postgres_url) as conn:
            found = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename LIKE 'share%'"
            ).fetchall()
        assert {name for (name,) in found} == TABLES | {"share_event_counter"}
        assert sql_mentions({"share_event_counter"}, ROOT / "backend" / "sharing") == []


def test_backend_sharing_exports_exactly_its_public_names():
    assert_public_surface(
        backend.sharing,
        {
            "ACTS",
            "ALLOWED_ACTS",
            "CHAT_ROLES",
            "MAX_LINK_TOKEN_CHARS",
            "MAX_SNAPSHOT_BYTES",
            "MAX_SNAPSHOT_MESSAGES",
            "MEMBER_ROLES",
            "SHARING_FILE",
            "AccountDirectory",
            "Act",
            "ChatRef",
            "ChatRole",
            "Member",
            "MemberRole",
            "MessageHit",
            "NewShareLink",
            "RunHooks",
            "ShareLink",
            "SharedBy",
            "SharedChat",
            "SharedSnapshot",
            "Sharing",
            "SharingChange",
            "SharingChanges",
            "SnapshotAttachment",
            "SnapshotMessage",
            "role_allows",
        },
    )
