"""A hostile client below the browser aims today's events at another person's data.

Bob, signed in on a raw socket, names alice's chats, archived chat, messages and agent in the
archive, "New chat with ▾", branch, header and meter events, calls the shared states' server-side
reloads with alice's user id, and sends oversize, lone-surrogate and path-traversal ids,
out-of-range archive settings and crafted ``?leaf=`` exports. Every attempt leaves alice's data
as it was, nothing bob receives names anything of hers (text, title or id), and bob gets a
clear refusal or nothing, on a server that keeps serving him.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from backend.agents import AgentLibrary, AgentSpec
from backend.chats import Chats
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.states.archive import ArchivePolicyTabState, SharedArchiveState
from chatsapp.states.conversation import (
    ChatTabState,
)
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.memory import SharedMemoryState
from chatsapp.states.models import ChatSettingsTabState, SharedChatSettingsState
from chatsapp.states.search import SearchTabState
from chatsapp.states.share_dialog import ShareDialogTabState
from chatsapp.states.share_links import LinkEndTabState
from chatsapp.states.shared_conversation import MAX_FOLLOWED_BRANCHES, SharedConversationState
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_S
from tests.support.raw_client import HYDRATE, RawTab

# alice's part, under a name no other story uses: what is planted here (an agent, memory, an
# archived chat) must not change the stories of the shared "alice".
VICTIM = "alina"
SECRET_TITLE = "Quetzal merger memo"
SECRET_ARCHIVED_TITLE = "Quetzal archived ledger"
SECRET_TEXT = "the safe combination is 4482-narwhal"
SECRET_AGENT = "Quetzal negotiator"
SECRET_MEMORY = "quetzal-memory-4482"
SECRET_MESSAGE_ID = "alice-quetzal-m1"
LONE_SURROGATE = "\ud800"
HOSTILE_IDS = (
    "../../etc/passwd",
    "..%2F..%2Fdirectory.sqlite",
    "/etc/passwd",
    "a\x00b",
    LONE_SURROGATE,
    "x" * 200_000,
    "",
)


@dataclass
class Alice:
    user_id: str
    chat_id: str
    archived_chat_id: str
    agent_id: str

    def names(self) -> tuple[str, ...]:
        """Everything of alice's that must never reach bob's socket.

        Each name is long enough not to turn up by chance: bob receives fresh UUID tokens,
        millisecond timestamps and ports, and a bare "4482" failed a story once in a CI-like
        run (not reproduced in 12 runs of the file alone); alice's memory is named whole.
        """
        return (
            "Quetzal",
            "quetzal-memory",
            "4482-narwhal",
            SECRET_MESSAGE_ID,
            self.chat_id,
            self.archived_chat_id,
            self.agent_id,
            self.user_id,
        )


@dataclass
class Bob:
    user_id: str
    chat_id: str
    session_token: str


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


@pytest.fixture(scope="module")
def alice(app_server: AppServer) -> Alice:
    app_server.session_token(VICTIM)
    user_id = app_server.user_id(VICTIM)
    with Chats(app_server.data_dir, user_id) as chats:
        chat_id = chats.create_chat(SECRET_TITLE).id
        chats.get_chat(chat_id).session.append_message(
            {
                "id": SECRET_MESSAGE_ID,
                "role": "user",
                "parts": [{"type": "text", "text": SECRET_TEXT}],
            }
        )
        archived_id = chats.create_chat(SECRET_ARCHIVED_TITLE).id
        chats.archive_chat(archived_id)
        chats.set_shared_context("user_memory", SECRET_MEMORY)
        agent_id = AgentLibrary(chats.database).create(AgentSpec(name=SECRET_AGENT)).agent_id
    return Alice(user_id, chat_id, archived_id, agent_id)


@pytest.fixture(scope="module")
def bob_account(app_server: AppServer) -> Bob:
    token = app_server.session_token("bob")
    user_id = app_server.user_id("bob")
    with Chats(app_server.data_dir, user_id) as chats:
        chat_id = chats.create_chat("Bob's own chat").id
        session = chats.get_chat(chat_id).session
        session.append_message(
            {"id": "b1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        )
        session.append_message(
            {"id": "b2", "role": "assistant", "parts": [{"type": "text", "text": "hello"}]}
        )
    return Bob(user_id, chat_id, token)


@pytest.fixture(autouse=True)
def no_handler_fails(app_server: AppServer) -> Iterator[None]:
    """Every attempt is answered by the handler itself: none raises out of it."""
    start = app_server.log_path.stat().st_size
    yield
    with app_server.log_path.open("rb") as log:
        log.seek(start)
        written = log.read().decode(errors="replace")
    assert "Reflex Backend Exception" not in written, written[-3000:]


@pytest.fixture
def bob(app_server: AppServer, bob_account: Bob) -> Iterator[RawTab]:
    """Bob's tab with his lists linked and his own chat open (as the page would have it)."""
    tab = RawTab(app_server.backend_url, session_token=bob_account.session_token).connect()
    tab.send(HYDRATE)
    for state in (SharedDirectoryState, SharedArchiveState, SharedMemoryState):
        tab.send(event(state, "link"))
    chat_page = f"/chat/{bob_account.chat_id}"
    tab.send(event(ChatTabState, "open_chat"), path=chat_page)
    tab.send(event(ChatSettingsTabState, "load"), path=chat_page)
    tab.settle()
    yield tab
    tab.close()


def alice_state(server: AppServer, alice: Alice) -> dict[str, Any]:
    """What bob's attempts must leave unchanged."""
    with Chats(server.data_dir, alice.user_id) as chats:
        summaries = {
            s.id: s for flag in (False, True) for s in chats.list_chats(limit=100, archived=flag)
        }
        history = chats.get_chat(alice.chat_id).session.get_history()
        return {
            "chats": sorted((s.id, s.title, s.archived_at is not None) for s in summaries.values()),
            "messages": [(m["id"], m["parts"][0]["text"]) for m in history],
            "policy": chats.auto_archive_days(),
            "agents": [a.agent_id for a in AgentLibrary(chats.database).list_agents()],
        }


def bob_chat_count(server: AppServer, bob: Bob) -> int:
    with Chats(server.data_dir, bob.user_id) as chats:
        return sum(len(chats.list_chats(limit=1000, archived=flag)) for flag in (False, True))


def assert_nothing_of_alice(tab: RawTab, alice: Alice, *, sent: tuple[str, ...] = ()) -> None:
    """No name of alice's anywhere bob's socket delivered, but for an id bob ``sent`` himself
    (it comes back in the refusal that names it, or as the address of his own tab)."""
    received = tab.text()
    leaked = [n for n in alice.names() if n not in sent and n in received]
    where = [received[max(0, received.find(n) - 80) : received.find(n) + 80] for n in leaked]
    assert not leaked, f"bob received {leaked}: {where}"


def refusals(updates: list[dict[str, Any]]) -> str:
    """The toasts and errors bob was shown, as one string."""
    return str([u.get("events") for u in updates]) + str([u.get("delta") for u in updates])


def var_values(updates: list[dict[str, Any]], state: type, var: str) -> list[Any]:
    name = state.get_full_name()
    found = []
    for update in updates:
        delta = (update.get("delta") or {}).get(name) or {}
        for key in (var, f"{var}_rx_state_"):
            if key in delta:
                found.append(delta[key])
    return found


class TestBobCannotReachAlicesChatsThroughTodaysEvents:
    def test_archiving_deleting_or_renaming_alices_chats_by_id_is_refused_and_changes_nothing(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        before = alice_state(app_server, alice)
        bob.send(event(SidebarTabState, "archive_chat"), {"chat_id": alice.chat_id})
        bob.send(event(SidebarTabState, "unarchive_chat"), {"chat_id": alice.archived_chat_id})
        bob.send(event(SidebarTabState, "delete_chat"), {"chat_id": alice.chat_id, "title": "x"})
        bob.send(event(SidebarTabState, "start_rename"), {"chat_id": alice.chat_id, "title": "x"})
        bob.send(event(SidebarTabState, "commit_rename"))
        updates = bob.settle()
        said = refusals(updates)
        assert said.count("Could not change the archive") == 2, said
        assert "Could not delete the chat" in said and "Could not rename" in said
        assert alice_state(app_server, alice) == before
        assert_nothing_of_alice(bob, alice, sent=(alice.chat_id, alice.archived_chat_id))

    def test_a_new_chat_with_alices_agent_is_refused_and_makes_no_chat(
        self, app_server: AppServer, alice: Alice, bob_account: Bob, bob: RawTab
    ):
        chats_before = bob_chat_count(app_server, bob_account)
        bob.send(event(SidebarTabState, "create_chat_with"), {"agent_id": alice.agent_id})
        updates = bob.settle()
        assert "Could not start the chat" in refusals(updates)
        assert bob_chat_count(app_server, bob_account) == chats_before
        assert_nothing_of_alice(bob, alice, sent=(alice.agent_id,))

    def test_the_header_and_meter_of_alices_chat_cannot_be_loaded_or_changed(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        before = alice_state(app_server, alice)
        alice_page = f"/chat/{alice.chat_id}"
        bob.send(event(ChatTabState, "open_chat"), path=alice_page)
        bob.send(event(ChatSettingsTabState, "load"), path=alice_page)
        bob.send(event(ChatSettingsTabState, "toggle_archived"), path=alice_page)
        bob.send(event(ChatSettingsTabState, "choose_model"), {"key": "auto"}, path=alice_page)
        bob.send(event(ChatSettingsTabState, "use_latest_agent"), path=alice_page)
        bob.settle()
        assert alice_state(app_server, alice) == before
        assert_nothing_of_alice(bob, alice, sent=(alice.chat_id,))

    def test_alices_chat_cannot_be_shared_linked_or_offered_as_a_link_end(
        self, app_server: AppServer, alice: Alice, bob: RawTab, bob_account: Bob
    ):
        """The share dialog's events act on the tab's chat, which must be one bob may share:
        on alice's page he is refused; on his own, her message is no end for his link."""
        before = alice_state(app_server, alice)
        alice_page = f"/chat/{alice.chat_id}"
        bob.send(event(ChatTabState, "open_chat"), path=alice_page)
        bob.send(event(LinkEndTabState, "load"), path=alice_page)
        bob.send(event(ShareDialogTabState, "set_open"), {"value": True}, path=alice_page)
        bob.send(
            event(ShareDialogTabState, "share"),
            {"form_data": {"username": "bob", "role": "participant"}},
            path=alice_page,
        )
        bob.send(
            event(ShareDialogTabState, "create_link"),
            {"form_data": {"up_to": SECRET_MESSAGE_ID}},
            path=alice_page,
        )
        bob.send(event(ShareDialogTabState, "set_owner_context"), {"enabled": True})
        own_page = f"/chat/{bob_account.chat_id}"
        bob.send(event(ChatTabState, "open_chat"), path=own_page)
        bob.send(
            event(ShareDialogTabState, "create_link"),
            {"form_data": {"up_to": SECRET_MESSAGE_ID}},
            path=own_page,
        )
        updates = bob.settle()
        assert not any(var_values(updates, ShareDialogTabState, "new_link_url"))
        assert not any(var_values(updates, LinkEndTabState, "ends"))
        errors = var_values(updates, ShareDialogTabState, "error")
        assert sum("not found" in str(e) for e in errors) >= 2, errors  # as for an unknown chat
        assert alice_state(app_server, alice) == before
        assert_nothing_of_alice(bob, alice, sent=(alice.chat_id, SECRET_MESSAGE_ID))

    def test_naming_a_message_of_alices_chat_as_a_branch_shows_none_of_it(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        for handler in ("show_sibling", "fork_from", "regenerate", "start_edit"):
            argument = {
                "show_sibling": "sibling_id",
                "fork_from": "message_id",
                "regenerate": "assistant_message_id",
                "start_edit": "message_id",
            }[handler]
            payload = {argument: SECRET_MESSAGE_ID}
            if handler == "start_edit":
                payload["text"] = "edited by bob"
            bob.send(event(ChatTabState, handler), payload)
        bob.send(event(ChatTabState, "submit_edit"))
        bob.send(event(ChatTabState, "load_earlier"))
        updates = bob.settle()
        for refusal in ("show that version", "regenerate", "edit the message", "fork"):
            assert f"Could not {refusal}" in refusals(updates)
        assert SECRET_MESSAGE_ID not in json.dumps(
            var_values(updates, SharedConversationState, "leaf_of")
        )
        assert alice_state(app_server, alice)["messages"] == [(SECRET_MESSAGE_ID, SECRET_TEXT)]
        received = bob.text()
        assert SECRET_TEXT not in received and "Quetzal" not in received
        assert alice.chat_id not in received

    def test_the_shared_states_server_side_reloads_cannot_be_called_for_alice(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        """``reload``/``refresh`` take a user id from their caller: no client is one."""
        for state, handler in (
            (SharedDirectoryState, "reload"),
            (SharedArchiveState, "reload"),
            (SharedMemoryState, "reload"),
            (SharedConversationState, "refresh"),
            (SharedChatSettingsState, "refresh"),
        ):
            bob.send(event(state, handler), {"user_id": alice.user_id})
        forged_row = {"id": "forged-row-id", "title": "forged", "updated_at": 0}
        bob.send(event(SharedDirectoryState, "place"), {"rows": [forged_row]})
        bob.send(event(SharedConversationState, "follow"), {"leaf": "forged-leaf"})
        bob.send(event(SearchTabState, "archive_changed"), {"chat_id": "x", "archived": True})
        bob.settle()
        assert_nothing_of_alice(bob, alice)
        state = json.dumps([u.get("delta") for u in bob.received])
        assert "forged-row-id" not in state and "forged-leaf" not in state

    def test_following_ten_thousand_leaves_keeps_the_followed_branches_bounded(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        leaves = [f"leaf-{n}" for n in range(10_000)]
        bob.send(event(SharedConversationState, "follow"), {"leaf": leaves})
        bob.send(event(SharedConversationState, "follow"), {"leaf": "y" * 500_000})
        for leaf in leaves[: MAX_FOLLOWED_BRANCHES * 3]:
            bob.send(event(ChatTabState, "show_sibling"), {"sibling_id": leaf})
        bob.send(event(ChatTabState, "show_sibling"), {"sibling_id": "b1"})  # his own message
        updates = bob.settle()
        assert refusals(updates).count("Could not show that version") == MAX_FOLLOWED_BRANCHES * 3
        followed = var_values(updates, SharedConversationState, "leaf_of")
        assert all(len(leaf_of) <= MAX_FOLLOWED_BRANCHES for leaf_of in followed)
        assert not any("leaf-" in str(leaf_of) for leaf_of in followed)
        assert not any("y" * 1000 in str(leaf_of) for leaf_of in followed)
        assert_nothing_of_alice(bob, alice)


class TestHostileIdsAndValuesGetAClearErrorAndLoseNothing:
    @pytest.mark.parametrize("hostile", HOSTILE_IDS, ids=lambda v: repr(v)[:24])
    def test_hostile_chat_and_agent_ids_are_refused_and_the_server_keeps_serving(
        self, app_server: AppServer, alice: Alice, bob_account: Bob, bob: RawTab, hostile: str
    ):
        before = alice_state(app_server, alice)
        chats_before = bob_chat_count(app_server, bob_account)
        bob.send(event(SidebarTabState, "archive_chat"), {"chat_id": hostile})
        bob.send(event(SidebarTabState, "unarchive_chat"), {"chat_id": hostile})
        bob.send(event(SidebarTabState, "create_chat_with"), {"agent_id": hostile})
        bob.send(event(ChatTabState, "show_sibling"), {"sibling_id": hostile})
        bob.send(event(ChatTabState, "open_chat"), path=f"/chat/{hostile}")
        bob.send(event(ChatSettingsTabState, "load"), path=f"/chat/{hostile}")
        updates = bob.settle()
        said = refusals(updates)
        assert said.count("Could not change the archive") == 2, said[:2000]
        assert "Could not start the chat" in said
        assert "Could not show that version" in said
        assert bob_chat_count(app_server, bob_account) == chats_before
        assert alice_state(app_server, alice) == before
        assert_nothing_of_alice(bob, alice)

    @pytest.mark.parametrize("hostile", [["a", "b"], {"id": "x"}, 7, None, True])
    def test_ids_that_are_not_text_are_refused_and_change_nothing(
        self, app_server: AppServer, alice: Alice, bob_account: Bob, bob: RawTab, hostile: Any
    ):
        before = alice_state(app_server, alice)
        chats_before = bob_chat_count(app_server, bob_account)
        for state, handler, argument in (
            (SidebarTabState, "archive_chat", "chat_id"),
            (SidebarTabState, "unarchive_chat", "chat_id"),
            (SidebarTabState, "create_chat_with", "agent_id"),
            (ChatTabState, "show_sibling", "sibling_id"),
            (ChatTabState, "regenerate", "assistant_message_id"),
            (ChatTabState, "fork_from", "message_id"),
        ):
            bob.send(event(state, handler), {argument: hostile})
        bob.settle()
        assert bob_chat_count(app_server, bob_account) == chats_before
        assert alice_state(app_server, alice) == before
        assert_nothing_of_alice(bob, alice)

    @pytest.mark.parametrize("query", ["%", "_", "../..", LONE_SURROGATE, "q" * 200_000])
    def test_hostile_archived_filters_find_only_bobs_chats(
        self, app_server: AppServer, alice: Alice, bob: RawTab, query: str
    ):
        bob.send(event(SidebarTabState, "toggle_archived"))
        bob.send(event(SearchTabState, "set_archived_query"), {"value": query})
        bob.send(event(SearchTabState, "search_archived"))
        bob.send(event(SearchTabState, "set_title_query"), {"value": query})
        bob.send(event(SearchTabState, "search_titles"))
        bob.settle()
        assert_nothing_of_alice(bob, alice)

    @pytest.mark.parametrize(
        "days", ["0", "3651", "-1", "abc", "1e3", "9" * 5000, LONE_SURROGATE, 99_999, None, ["7"]]
    )
    def test_an_archive_setting_out_of_range_or_not_a_number_is_refused_and_saves_nothing(
        self, app_server: AppServer, alice: Alice, bob_account: Bob, bob: RawTab, days: Any
    ):
        before = alice_state(app_server, alice)
        bob.send(event(ArchivePolicyTabState, "load"))
        bob.send(event(ArchivePolicyTabState, "set_days"), {"value": days})
        bob.send(event(ArchivePolicyTabState, "save"))
        updates = bob.settle()
        errors = [e for e in var_values(updates, ArchivePolicyTabState, "error") if e]
        assert errors, "bob was told why nothing was saved"
        assert "Nothing was saved" in errors[-1] or "whole number" in errors[-1]
        with Chats(app_server.data_dir, bob_account.user_id) as chats:
            assert chats.auto_archive_days() is None
        assert alice_state(app_server, alice) == before

    def test_malformed_frames_are_dropped_and_the_server_keeps_serving(
        self, app_server: AppServer, alice: Alice, bob_account: Bob
    ):
        unknown = {"name": "x.y", "payload": {"big": "z" * 100_000}, "router_data": {}}
        for frame in ("{not json", 42, ["a"], {"name": 5}, unknown):
            tab = RawTab(app_server.backend_url, session_token=bob_account.session_token).connect()
            try:
                tab.send_raw(frame)
                fresh = RawTab(
                    app_server.backend_url, session_token=bob_account.session_token
                ).connect()
                try:
                    fresh.send(event(SharedDirectoryState, "link"))
                    assert fresh.settle()
                finally:
                    fresh.close()
                assert_nothing_of_alice(tab, alice)
            finally:
                tab.close()
        log = app_server.log_path.read_text(errors="replace")
        assert "Error processing event queue entry" in log  # the unknown event was logged,
        assert bob_account.session_token not in log  # without bob's credentials
        assert "z" * 5000 not in log  # nor the whole payload


class TestTheBranchExportServesOnlyBobsOwnBranches:
    @pytest.mark.parametrize(
        ("target", "leaf", "status"),
        [
            ("bob", "../../etc/passwd", 404),
            ("bob", "..%2F..%2Fdirectory.sqlite", 404),
            ("bob", SECRET_MESSAGE_ID, 404),
            ("bob", "%ED%A0%80", 404),  # a lone surrogate, UTF-8 encoded
            ("bob", "", 400),
            ("bob", "x" * 300, 400),
            ("alice", SECRET_MESSAGE_ID, 404),
            ("alice", "b2", 404),
        ],
    )
    def test_a_leaf_of_another_chat_or_a_hostile_one_is_refused(
        self,
        app_server: AppServer,
        alice: Alice,
        bob_account: Bob,
        target: str,
        leaf: str,
        status: int,
    ):
        chat_id = bob_account.chat_id if target == "bob" else alice.chat_id
        response = httpx.get(
            f"{app_server.backend_url}/export/chat/{chat_id}.md?leaf={leaf}",
            cookies={SESSION_COOKIE: bob_account.session_token},
            timeout=WAIT_S,
        )
        assert response.status_code == status, response.text
        assert not any(name in response.text for name in alice.names())

    def test_bobs_own_branch_exports(self, app_server: AppServer, bob_account: Bob):
        response = httpx.get(
            f"{app_server.backend_url}/export/chat/{bob_account.chat_id}.md?leaf=b1",
            cookies={SESSION_COOKIE: bob_account.session_token},
            timeout=WAIT_S,
        )
        assert response.status_code == 200
        assert "hi" in response.text and "hello" not in response.text
