"""Shared fixtures for every test layer."""

from __future__ import annotations

import functools
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

from backend import log_records
from backend.config import StorageChoice, parse_storage
from tests.support.rerun_report import FirstFailures
from tests.support.storage_engines import selected_engines

if TYPE_CHECKING:  # imported when a test asks for PostgreSQL: psycopg takes ~0.3-1.4 s to load
    from tests.support.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parent.parent

# A test process hosts the backend as the app does: its log lines are well-formed too (a lone
# surrogate in a captured record crashed an xdist worker sending the report).
log_records.install()

# A property test in a class that runs on both engines is one method called on two instances
# (one per engine): hypothesis calls that "differing executors". Each engine's run draws its
# own examples, so replaying one from the example database cannot mix the two.
# No verdict of a property test depends on the clock (tests/support/deadlines.py): a busy
# machine may take longer than hypothesis's 200 ms per example or find examples slowly.
settings.register_profile(
    "chats",
    deadline=None,
    suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
)
settings.load_profile("chats")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server per test process, started by the first test that asks for it
    (tests/support/postgres_server.py) and removed at the end."""
    from tests.support.postgres_server import start_postgres

    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, empty database namespace, dropped after the test."""
    with postgres_server.fresh_database() as url:
        yield url


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--storage",
        default=os.environ.get("CHATS_TEST_STORAGE", "both"),
        help="engines for tests using the storage fixture: both (default), sqlite, postgresql",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test using ``storage`` runs once per selected engine (tests/support/storage_engines)."""
    if "storage" in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        engines = selected_engines(metafunc.config.getoption("storage"), sqlite_only)
        metafunc.parametrize("storage", engines, indirect=True)


@pytest.fixture
def storage(request: pytest.FixtureRequest) -> Iterator[StorageChoice]:
    """``CHATS_STORAGE`` for this run of the test: ``"sqlite"``, or an empty PostgreSQL
    namespace: one an earlier test emptied (its tables migrated, tests/support/
    recycled_schemas.py) unless the test is marked ``fresh_schema``."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    from backend.storage.engines import PostgresStorage

    _pool_jitter_from_its_own_generator()
    server: PostgresServer = request.getfixturevalue("postgres_server")
    fresh = request.node.get_closest_marker("fresh_schema") is not None
    with server.fresh_database(recycled=not fresh) as url:
        location = parse_storage(url)
        assert not isinstance(location, str)
        # The engine (its pool) lives as long as the test, as it lives as long as the app's
        # process: stores a test opens and closes again reuse its connections instead of
        # logging in anew each time.
        engine = PostgresStorage(location)
        try:
            yield location
        finally:
            engine.close()


_POOL_RANDOM = random.Random(0)


def _pool_jitter_from_its_own_generator() -> None:
    """psycopg_pool draws each new connection's lifetime jitter from the global ``random``,
    on its own worker thread; a pool growing while Hypothesis draws an example moves the global
    generator under it, and Hypothesis warns ("Do not use the random module inside
    strategies"). In tests the pool draws from a generator of its own (a pool without that
    name is left as it is)."""
    import psycopg_pool.base

    if hasattr(psycopg_pool.base, "random"):
        psycopg_pool.base.random = _POOL_RANDOM.random  # type: ignore[attr-defined]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run browser tests last, files that start apps of their own first among them.

    Playwright's sync API keeps an event loop running in the main thread for as long as the
    session-scoped browser lives; async tests collected after it would find that loop and fail.
    Browser tests need no order among themselves (a worker's first app builds the pages and
    its later apps serve them, tests/support/app_server.py); the files that start apps are the
    longest, and two workers taking files in turn finish together when the longest go first.
    """
    items.sort(key=_run_order)


FIRST_FAILURES = FirstFailures()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    FIRST_FAILURES.note(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    FIRST_FAILURES.write(terminalreporter)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadFileScheduling | None:
    """``--dist loadfile``, with every file that uses the shared ``model_app`` as one unit.

    xdist's own grouping (``--dist loadgroup``) rewrites node ids in a way pytest 9 ignores,
    so every grouped test would run wherever it lands, starting the app on both workers.
    """
    if config.getvalue("dist") != "loadfile":
        return None
    return _SharedAppFileScheduling(config, log)


class _SharedAppFileScheduling(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return "model_app" if _uses_the_model_app(path) else path


@functools.cache
def _source(path: str) -> str:
    file = Path(path)
    return file.read_text() if file.name.startswith("test_") and file.exists() else ""


def _uses_the_model_app(path: str) -> bool:
    """A browser-test file whose stories ask for the shared ``model_app`` fixture (from its
    source: no list to forget)."""
    return re.search(r"\bmodel_app\b", _source(path)) is not None


def _run_order(item: pytest.Item) -> int:
    path = str(item.fspath)
    if "tests/e2e/" not in path:
        return 0
    starts_an_app = "start_app(" in _source(path) or _uses_the_model_app(path)
    return 1 if starts_an_app else 2
