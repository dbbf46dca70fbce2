"""What the data-folder and migration tests share: the people's password, an admin-added
endpoint's key, an image message part, settings for a folder (on an engine), and a run's
turn that fills the runtime's tables."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from unittest import mock

from backend.chats import Chats
from backend.config import Settings
from backend.runtime import ChatRuntime
from tests.portability.conftest import PNG

PASSWORD = "correct horse battery staple"
ENDPOINT_KEY = "sk-admin-added-0123456789"
IMAGE = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,"}
IMAGE["url"] += base64.b64encode(PNG).decode()


def settings_for(data_dir: Path, storage: str = "") -> Settings:
    """A folder's settings (``storage`` names the engine; the cheapest password hashes)."""
    env = {
        "CHATS_DATA_DIR": str(data_dir),
        "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
        "CHATS_STORAGE": storage,
    }
    return Settings.from_env(env)


class engine:
    """``CHATS_STORAGE`` for the stores opened inside (the directory must match it)."""

    def __init__(self, storage: str) -> None:
        self._patch = mock.patch.dict(os.environ, {"CHATS_STORAGE": storage})

    def __enter__(self) -> None:
        self._patch.start()

    def __exit__(self, *exc: object) -> None:
        self._patch.stop()


async def run_one_turn(settings: Settings, chats: Chats, chat_id: str) -> None:
    """A reply from the offline model and a session-state write: the runtime's tables."""
    runtime = ChatRuntime(settings, chats)
    try:
        await runtime.send_message(chat_id, "Where did we leave the kayak?")
        await runtime.wait_idle(chat_id)
        await runtime.put_session_state(chat_id, {"kayak": "boathouse"}, expected_version=0)
    finally:
        await runtime.aclose()
