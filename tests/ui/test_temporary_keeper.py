"""The app's temporary keeper: a chat a tab shows is held on; once none does, it goes after
the grace (counted on an injected clock, so no real time passes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import Settings
from backend.errors import ChatNotFoundError
from chatsapp.live.temporary_keeper import TemporaryKeeper
from chatsapp.services import Services
from tests.chats.conftest import FakeClock

USER = "u1"
GRACE_MS = 60_000


def test_a_shown_chat_is_held_and_an_unshown_one_goes_after_the_grace(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = Settings.from_env(
        {"CHATS_DATA_DIR": str(tmp_path), "CHATS_TEMPORARY_CHAT_GRACE_S": str(GRACE_MS // 1000)}
    )
    served = Services(settings, clock=clock)
    chats = served.directory(USER)
    chat_id = chats.temporary.start().id
    shown: set[tuple[str, str]] = {(USER, chat_id)}
    keeper = TemporaryKeeper(served, lambda: set(shown))
    assert keeper.interval_s == GRACE_MS / 1000 / 4

    for _ in range(6):  # three graces, a tab showing it all along
        clock.advance(GRACE_MS // 2)
        keeper.one_pass()
        assert chats.get_summary(chat_id).temporary
    shown.clear()  # its last tab closed
    held_until = clock.now + GRACE_MS // 2  # at least: the passes renew before it is less
    clock.advance(held_until - clock.now - 1)
    keeper.one_pass()
    assert chats.get_summary(chat_id).temporary, "a reload within the grace keeps it"
    clock.advance(GRACE_MS)
    keeper.one_pass()
    with pytest.raises(ChatNotFoundError):
        chats.get_summary(chat_id)
    keeper.one_pass()  # nobody's temporary chats left: nothing more to look at
    assert keeper._people == set()
    chats.close()
