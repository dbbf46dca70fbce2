"""Which client token a socket connect may be linked to, and how a refused one is replaced."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs

from chatsapp.auth.identity import connect_token, is_browser_token, may_use_tab
from chatsapp.auth.token_binding import Verdict, verdict, with_token

TAB = str(uuid.uuid4())


class TestWhoMayUseATab:
    def test_an_unbound_tab_may_be_used_by_anyone_signed_in_or_not(self):
        assert may_use_tab("", "alice-1")
        assert may_use_tab("", "")

    def test_a_bound_tab_may_be_used_by_its_owner(self):
        assert may_use_tab("alice-1", "alice-1")

    def test_a_bound_tab_may_not_be_used_by_another_person(self):
        assert not may_use_tab("alice-1", "bob-2")

    def test_a_bound_tab_may_not_be_used_by_a_signed_out_socket(self):
        assert not may_use_tab("alice-1", "")


class TestBrowserTokens:
    def test_a_uuid_is_a_browser_token(self):
        assert is_browser_token(str(uuid.uuid4()))

    def test_shared_state_tokens_and_junk_are_not(self):
        for token in (
            "user-alice-1",
            "conv-abc",
            f"solo-{uuid.uuid4()}",
            "",
            "x" * 36,
            str(uuid.uuid4()).upper(),
        ):
            assert not is_browser_token(token), token


class TestConnectTokens:
    def test_the_token_is_read_from_the_connect_query(self):
        environ = {"QUERY_STRING": "token=abc&EIO=4&transport=websocket"}
        assert connect_token(environ) == "abc"

    def test_a_connect_without_a_token_names_none(self):
        assert connect_token({}) == ""
        assert connect_token({"QUERY_STRING": "EIO=4"}) == ""

    def test_replacing_the_token_keeps_the_other_parameters_and_the_original(self):
        environ = {"QUERY_STRING": "token=stolen&EIO=4", "asgi.scope": {"type": "websocket"}}
        replaced = with_token(environ, "fresh")
        assert parse_qs(replaced["QUERY_STRING"]) == {"token": ["fresh"], "EIO": ["4"]}
        assert replaced["asgi.scope"] is environ["asgi.scope"]
        assert environ["QUERY_STRING"] == "token=stolen&EIO=4"


class TestWhatAConnectGets:
    def test_a_token_bound_to_this_person_is_kept(self):
        assert verdict(TAB, "alice-1", "alice-1") is Verdict.KEEP

    def test_a_token_bound_to_someone_else_is_refused(self):
        assert verdict(TAB, "alice-1", "bob-2") is Verdict.REFUSE

    def test_a_bound_token_is_refused_to_a_signed_out_socket(self):
        assert verdict(TAB, "alice-1", "") is Verdict.REFUSE

    def test_an_unbound_token_is_swapped_for_a_fresh_one_signed_in_or_not(self):
        # A tab state that expired while a shared state still lists its token looks like this.
        assert verdict(TAB, "", "bob-2") is Verdict.FRESH
        assert verdict(TAB, "", "") is Verdict.FRESH

    def test_a_token_no_browser_makes_is_refused_even_to_its_owner(self):
        assert verdict("user-alice-1", "alice-1", "alice-1") is Verdict.REFUSE
