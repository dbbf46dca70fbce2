"""The share dialog's owner-context checkbox reads the switch as the owner stored it, through
``Sharing.owner_context`` (which checks the reader is the owner), issue 28 item 3."""

from __future__ import annotations

import pytest

from backend.accounts import CONSOLE_ACTOR
from backend.errors import ChatActRefusedError
from backend.sharing import ChatRef
from chatsapp.services import Services
from chatsapp.states.chat_access import ChatAccess
from chatsapp.states.share_dialog import owner_context_switch

PASSWORD = "a long enough password"


def test_the_checkbox_shows_the_stored_switch_even_with_nobody_left_in_the_chat(
    app_services: Services,
):
    accounts = app_services.accounts()
    owner = accounts.create_user(CONSOLE_ACTOR, "olga", PASSWORD, "admin")
    pat = accounts.create_user(owner.id, "pat", PASSWORD)
    chat_id = app_services.directory(owner.id).create_chat("Trip").id
    chat = ChatRef(owner_id=owner.id, chat_id=chat_id)
    as_owner = ChatAccess(owner.id, chat_id, "owner", owner.id)
    sharing = app_services.sharing()

    assert not owner_context_switch(as_owner)
    sharing.share(owner, chat, "pat", "participant")
    sharing.set_owner_context(owner, chat, True)
    assert owner_context_switch(as_owner)
    sharing.remove_member(owner, chat, pat.id)
    assert owner_context_switch(as_owner)  # was read as "off" once nobody was left

    sharing.share(owner, chat, "pat", "participant")
    with pytest.raises(ChatActRefusedError):
        owner_context_switch(ChatAccess(owner.id, chat_id, "participant", pat.id))
