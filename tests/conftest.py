"""Shared fixtures for every test layer."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run browser tests last, files that start apps of their own first among them.

    Playwright's sync API keeps an event loop running in the main thread for as long as the
    session-scoped browser lives; async tests collected after it would find that loop and fail.
    Browser tests need no order among themselves (each app builds its pages in a frontend
    folder of its own, tests/e2e/app_server.py); the files that start apps are the longest,
    and two workers taking files in turn finish together when the longest go first.
    """
    items.sort(key=_run_order)


@functools.cache
def _starts_its_own_app(path: str) -> bool:
    """A browser-test file that calls ``start_app`` (read from its source: no list to forget)."""
    return Path(path).name.startswith("test_") and "start_app(" in Path(path).read_text()


def _run_order(item: pytest.Item) -> int:
    path = str(item.fspath)
    if "tests/e2e/" not in path:
        return 0
    return 1 if _starts_its_own_app(path) else 2
