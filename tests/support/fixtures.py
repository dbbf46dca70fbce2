"""Pytest fixtures other suites import into their ``conftest.py``.

from tests.support.fixtures import anyio_backend, fake_openai  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI` server, stopped after the test."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def anyio_backend() -> str:
    """Run ``@pytest.mark.anyio`` tests on asyncio only (the app's loop)."""
    return "asyncio"
