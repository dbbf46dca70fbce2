"""A PostgreSQL twin overrides its SQLite store by method name: a rename in the SQLite store
must not silently leave the twin's override behind (the base method's SQLite statement would
then run on PostgreSQL)."""

from __future__ import annotations

import inspect

import pytest

from backend.accounts.pg_store import PgAccountsStore
from backend.accounts.store import AccountsStore
from backend.endpoints.pg_store import PgEndpointStore
from backend.endpoints.store import EndpointStore

TWINS = [(PgAccountsStore, AccountsStore), (PgEndpointStore, EndpointStore)]


@pytest.mark.parametrize(("twin", "base"), TWINS, ids=lambda c: c.__name__)
def test_every_method_a_twin_defines_overrides_one_of_its_sqlite_store(twin, base) -> None:
    own = [
        name
        for name, member in vars(twin).items()
        if inspect.isfunction(member) and not name.startswith("__")
    ]
    assert [name for name in own if not hasattr(base, name)] == []
