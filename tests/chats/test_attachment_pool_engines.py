"""The directory's shared attachment pool on both engines (``AttachmentPool`` and its twin).

Payloads are stored once per directory, read back byte for byte whatever their size, and
kept exactly while a chat of that directory references them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats.attachment_pool import AttachmentPool
from backend.chats.directory_storage import twin_of
from backend.chats.pg_attachment_pool import PgAttachmentPool
from backend.config import StorageChoice
from backend.sessions.chunking import MAX_INLINE_ROW_BYTES
from tests.support.storage_engines import directory_scope

SMALL = b"\x00small\xffpayload\x00"
LARGE = bytes(range(256)) * (2 * MAX_INLINE_ROW_BYTES // 256 + 3)


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.fixture
def pool(tmp_path: Path, storage: StorageChoice) -> Iterator[AttachmentPool]:
    with directory_scope(storage, _folder(tmp_path / "alice")) as db:
        yield twin_of(AttachmentPool, db)(db)


def _store(pool: AttachmentPool, num: int, payloads: dict[str, tuple[bytes, str]]) -> None:
    with pool.db.transaction():
        pool.put(payloads)
        pool.add_references(num, payloads)


def test_the_pool_twin_is_the_one_made_for_the_scope_s_engine(pool):
    postgres = pool.db.engine_kind == "postgresql"
    assert type(pool) is (PgAttachmentPool if postgres else AttachmentPool)


def test_payloads_of_any_size_read_back_byte_for_byte(pool):
    assert len(LARGE) > 2 * MAX_INLINE_ROW_BYTES
    _store(pool, 1, {digest(SMALL): (SMALL, "text/plain"), digest(LARGE): (LARGE, "image/png")})
    assert pool.held([digest(SMALL), digest(LARGE), "sha256:absent"]) == {
        digest(SMALL),
        digest(LARGE),
    }
    assert pool.load({digest(SMALL), digest(LARGE), "sha256:absent"}) == {
        digest(SMALL): (SMALL, "text/plain"),
        digest(LARGE): (LARGE, "image/png"),
    }
    assert pool.held([]) == set() and pool.load(set()) == {}


def test_a_payload_already_held_is_left_as_it_is(pool):
    _store(pool, 1, {digest(SMALL): (SMALL, "text/plain")})
    _store(pool, 2, {digest(SMALL): (SMALL, "application/octet-stream")})
    assert pool.load({digest(SMALL)}) == {digest(SMALL): (SMALL, "text/plain")}


def test_a_payload_stays_while_any_chat_references_it(pool):
    _store(pool, 1, {digest(SMALL): (SMALL, "text/plain"), digest(LARGE): (LARGE, "image/png")})
    _store(pool, 2, {digest(SMALL): (SMALL, "text/plain")})
    with pool.db.transaction():
        pool.drop_chat(1)
    assert pool.held([digest(SMALL), digest(LARGE)]) == {digest(SMALL)}
    assert pool.load({digest(LARGE)}) == {}
    with pool.db.transaction():
        pool.drop_chat(2)
        pool.drop_chat(3)  # a chat without references
    assert pool.held([digest(SMALL)]) == set()


def test_two_directories_on_one_engine_keep_their_own_copies(
    pool, tmp_path: Path, storage: StorageChoice
):
    _store(pool, 1, {digest(SMALL): (SMALL, "text/plain")})
    with directory_scope(storage, _folder(tmp_path / "bob")) as bob_db:
        bob = twin_of(AttachmentPool, bob_db)(bob_db)
        assert bob.held([digest(SMALL)]) == set() and bob.load({digest(SMALL)}) == {}
        _store(bob, 1, {digest(SMALL): (SMALL, "text/plain")})
        with bob_db.transaction():
            bob.drop_chat(1)
        assert bob.held([digest(SMALL)]) == set()
    assert pool.load({digest(SMALL)}) == {digest(SMALL): (SMALL, "text/plain")}
