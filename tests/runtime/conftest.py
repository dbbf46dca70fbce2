import pytest

from backend.chats import Chats
from tests.support.fixtures import anyio_backend, fake_openai

__all__ = ["anyio_backend", "chats", "fake_openai"]


@pytest.fixture
def chats(tmp_path):
    """The directory of ``user1`` under ``tmp_path / "data"`` (closed after the test)."""
    directory = Chats(tmp_path / "data", "user1")
    yield directory
    directory.close()
