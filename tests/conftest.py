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
    """Run browser tests last, the multi-worker production test after every other.

    Playwright's sync API keeps an event loop running in the main thread for as long as the
    session-scoped browser lives; async tests collected after it would find that loop and fail.
    """
    items.sort(key=_run_order)


# Browser-test files that start an app of their own (see _run_order).
_OWN_APP_FILES = (
    "test_multi_worker",
    "test_model_failure",
    "test_remote_images",
    "test_accounts",
    "test_clean_stop",
)


def _run_order(item: pytest.Item) -> int:
    path = str(item.fspath)
    if any(f"tests/e2e/{name}" in path for name in _OWN_APP_FILES):
        # After every test of the shared app: starting another app rewrites .web/env.json,
        # which the shared dev app's frontend reads to find its backend.
        return 2
    return 1 if "tests/e2e/" in path else 0
