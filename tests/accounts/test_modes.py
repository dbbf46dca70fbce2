"""CHATS_AUTH=header honours a proxy's identity header only from a trusted proxy;
CHATS_AUTH=none refuses to serve anything but loopback."""

from __future__ import annotations

import pytest

from backend.accounts import (
    CONSOLE_ACTOR,
    Accounts,
    check_listen_address,
    check_startup,
    client_address,
)
from backend.errors import (
    AccountDisabledError,
    ConfigurationError,
    InvalidUsernameError,
    LoopbackRequiredError,
    MissingIdentityHeaderError,
    UntrustedProxyError,
)
from tests.accounts.conftest import make_settings

PROXY = "10.0.0.5"


@pytest.fixture
def header_accounts(data_dir, clock):
    settings = make_settings(
        data_dir,
        auth_mode="header",
        auth_header="Remote-User",
        trusted_proxies=("10.0.0.0/24", "::1"),
    )
    with Accounts(settings, clock=clock) as accounts:
        yield accounts


class TestHeaderMode:
    def test_a_trusted_proxys_header_signs_the_person_in_and_provisions_them_once(
        self, header_accounts
    ):
        first = header_accounts.identity_from_headers({"Remote-User": "Dana"}, PROXY)
        again = header_accounts.identity_from_headers({"remote-user": "dana"}, "10.0.0.7")
        assert first == again
        assert (first.username, first.role, first.has_password) == ("dana", "user", False)

    def test_an_admin_made_on_the_console_is_that_admin_through_the_proxy(self, header_accounts):
        owner = header_accounts.create_user(CONSOLE_ACTOR, "Owner", "admin password 1", "admin")
        assert header_accounts.identity_from_headers({"Remote-User": "owner"}, PROXY) == owner

    def test_the_same_header_from_an_untrusted_address_is_refused(self, header_accounts):
        with pytest.raises(UntrustedProxyError, match="did not come through") as caught:
            header_accounts.identity_from_headers({"Remote-User": "dana"}, "192.0.2.50")
        assert caught.value.peer_address == "192.0.2.50"
        assert header_accounts.user_by_username("dana") is None

    def test_a_forwarded_for_header_cannot_make_a_client_look_like_the_proxy(self, header_accounts):
        headers = {"Remote-User": "dana", "X-Forwarded-For": PROXY, "X-Real-IP": PROXY}
        with pytest.raises(UntrustedProxyError):
            header_accounts.identity_from_headers(headers, "192.0.2.50")

    def test_an_ipv4_proxy_seen_on_a_dual_stack_socket_is_trusted(self, header_accounts):
        assert header_accounts.identity_from_headers({"Remote-User": "dana"}, "::ffff:10.0.0.5")

    def test_a_missing_or_blank_header_is_refused_with_the_header_named(self, header_accounts):
        for headers in ({}, {"Remote-User": "  "}):
            with pytest.raises(MissingIdentityHeaderError, match="Remote-User"):
                header_accounts.identity_from_headers(headers, PROXY)

    def test_a_name_outside_the_username_rules_is_refused(self, header_accounts):
        with pytest.raises(InvalidUsernameError):
            header_accounts.identity_from_headers({"Remote-User": "../../etc"}, PROXY)

    def test_a_disabled_person_is_refused_even_through_the_proxy(self, header_accounts):
        dana = header_accounts.identity_from_headers({"Remote-User": "dana"}, PROXY)
        header_accounts.disable_user(CONSOLE_ACTOR, dana.id)
        with pytest.raises(AccountDisabledError):
            header_accounts.identity_from_headers({"Remote-User": "dana"}, PROXY)

    def test_header_mode_without_its_settings_refuses_to_start(self, data_dir):
        with pytest.raises(ConfigurationError, match="CHATS_AUTH_HEADER"):
            check_startup(make_settings(data_dir, auth_mode="header"), "0.0.0.0")
        settings = make_settings(data_dir, auth_mode="header", auth_header="Remote-User")
        with pytest.raises(ConfigurationError, match="CHATS_TRUSTED_PROXIES"):
            check_startup(settings, "0.0.0.0")
        bad = make_settings(
            data_dir, auth_mode="header", auth_header="Remote-User", trusted_proxies=("proxy",)
        )
        with pytest.raises(ConfigurationError, match="not an IP address"):
            check_startup(bad, "0.0.0.0")


class TestClientAddressBehindAProxy:
    def test_without_trusted_proxies_the_peer_is_the_client(self, data_dir):
        settings = make_settings(data_dir)
        headers = {"X-Forwarded-For": "203.0.113.7"}
        assert client_address(headers, "192.0.2.1", settings) == "192.0.2.1"

    def test_behind_a_trusted_proxy_the_forwarded_client_is_used(self, data_dir):
        settings = make_settings(data_dir, trusted_proxies=("10.0.0.0/24",))
        headers = {"X-Forwarded-For": "198.51.100.66, 203.0.113.7, 10.0.0.9"}
        # 198.51.100.66 was written by the client itself: only the hops our proxies added count.
        assert client_address(headers, "10.0.0.5", settings) == "203.0.113.7"

    def test_an_untrusted_peer_cannot_choose_its_address(self, data_dir):
        settings = make_settings(data_dir, trusted_proxies=("10.0.0.0/24",))
        headers = {"X-Forwarded-For": "203.0.113.7"}
        assert client_address(headers, "192.0.2.1", settings) == "192.0.2.1"


class TestNoneMode:
    @pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
    def test_loopback_addresses_are_accepted(self, host):
        assert check_listen_address(host) == host

    @pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com", ""])
    def test_anything_else_is_refused_with_a_sentence_that_says_what_to_do(self, host):
        with pytest.raises(LoopbackRequiredError, match="loopback address only"):
            check_listen_address(host)

    def test_none_mode_on_every_interface_refuses_to_start(self, data_dir):
        with pytest.raises(LoopbackRequiredError):
            check_startup(make_settings(data_dir, auth_mode="none"), "0.0.0.0")
        check_startup(make_settings(data_dir, auth_mode="none"), "127.0.0.1")

    def test_local_mode_may_listen_anywhere(self, data_dir):
        check_startup(make_settings(data_dir, auth_mode="local"), "0.0.0.0")
