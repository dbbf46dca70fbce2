"""The sidebar's message search: a member finds the messages of a chat shared with them,
labelled with its owner and titled as the owner titled it, and nothing else of the owner's
(issue 28 item 3)."""

from __future__ import annotations

from backend.accounts import CONSOLE_ACTOR
from backend.sharing import ChatRef
from chatsapp.services import Services
from chatsapp.states.search import _hit_rows

PASSWORD = "a long enough password"


def write(services: Services, user_id: str, title: str, text: str) -> str:
    chats = services.directory(user_id)
    chat_id = chats.create_chat(title).id
    chats.get_chat(chat_id).session.append_message(
        {"id": "m0", "role": "user", "parts": [{"type": "text", "text": text}]}
    )
    chats.flush_index()
    return chat_id


def test_a_members_hits_include_the_shared_chat_labelled_and_nothing_else(
    app_services: Services,
):
    accounts = app_services.accounts()
    owner = accounts.create_user(CONSOLE_ACTOR, "olga", PASSWORD, "admin")
    pat = accounts.create_user(owner.id, "pat", PASSWORD)
    write(app_services, owner.id, "Money", "the kayak cost 900 euros of my savings")
    trip = write(app_services, owner.id, "Trip", "we paddle the kayak north")
    mine = write(app_services, pat.id, "Gear", "my kayak paddle is blue")
    app_services.sharing().share(owner, ChatRef(owner_id=owner.id, chat_id=trip), "pat", "viewer")

    rows = _hit_rows(app_services.directory(pat.id), pat.id, "kayak")

    assert {(row.chat_id, row.title, row.shared_by) for row in rows} == {
        (mine, "Gear", ""),
        (trip, "Trip", "olga"),
    }


def test_without_an_account_the_search_is_the_persons_own(app_services: Services):
    chat_id = write(app_services, "local", "Notes", "the kayak is in the garage")
    rows = _hit_rows(app_services.directory("local"), "local", "kayak")
    assert [(row.chat_id, row.shared_by) for row in rows] == [(chat_id, "")]
