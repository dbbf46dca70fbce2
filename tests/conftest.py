"""Shared fixtures for every test layer."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run browser tests last.

    Playwright's sync API keeps an event loop running in the main thread for as long as the
    session-scoped browser lives; async tests collected after it would find that loop and fail.
    Browser tests need no order among themselves: each app builds its pages in a frontend
    folder of its own (tests/e2e/app_server.py).
    """
    items.sort(key=lambda item: "tests/e2e/" in str(item.fspath))
