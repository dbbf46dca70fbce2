"""Model endpoints: environment and admin configuration, the cached fail-soft catalogue, keys
that never leave the server, and clients built for a chosen (endpoint, model)."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR, Accounts, User
from backend.config import Settings, StorageChoice
from backend.endpoints import ModelCatalogue, ModelChoice, ModelEndpoints, env_endpoints
from backend.errors import (
    ConfigurationError,
    EndpointNotFoundError,
    InvalidEndpointError,
    PermissionDeniedError,
    UnknownModelError,
)
from backend.models import OFFLINE_LABEL, OFFLINE_REF, ModelRef, OpenAICompatibleProvider
from tests.support.fake_openai import FakeOpenAI

PASSWORD = "correct horse battery staple"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _dead_url() -> str:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.models = ["fake-model", "other-model"]
        yield fake


@pytest.fixture
def settings(data_dir: Path, server: FakeOpenAI, storage: StorageChoice) -> Settings:
    """On each storage engine in turn (tests/support/storage_engines.py)."""
    return dataclasses.replace(
        server.settings(data_dir),
        password_hash_profile="cheapest",
        model_endpoints="",
        storage=storage,
    )


@pytest.fixture
def accounts(settings: Settings) -> Iterator[Accounts]:
    with Accounts(settings) as opened:
        yield opened


@pytest.fixture
def admin(accounts: Accounts) -> User:
    return accounts.create_user(CONSOLE_ACTOR, "root-admin", PASSWORD, role="admin")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def endpoints(settings: Settings, accounts: Accounts, clock: Clock) -> Iterator[ModelEndpoints]:
    service = ModelEndpoints(settings, accounts, catalogue=ModelCatalogue(clock=clock))
    yield service
    service.close()


class TestEnvironmentEndpoints:
    def test_the_base_url_setting_is_the_default_endpoint_and_its_model_the_default(
        self, endpoints: ModelEndpoints
    ):
        assert [e.name for e in endpoints.endpoints()] == ["default"]
        assert endpoints.default_ref() == ModelRef("default", "fake-model")

    def test_several_endpoints_can_be_given_as_json(self, settings: Settings):
        more = json.dumps(
            [
                {"name": "ollama", "base_url": "http://127.0.0.1:11434/v1"},
                {
                    "name": "hosted",
                    "base_url": "https://api.example/v1",
                    "api_key": "k",
                    "models": ["gpt-x"],
                },
            ]
        )
        found = env_endpoints(dataclasses.replace(settings, model_endpoints=more))
        assert [(e.name, e.models, e.source) for e in found] == [
            ("default", (), "env"),
            ("ollama", (), "env"),
            ("hosted", ("gpt-x",), "env"),
        ]

    @pytest.mark.parametrize(
        "raw",
        [
            "not json",
            '{"name": "x"}',
            '[{"name": "ftp", "base_url": "ftp://host/v1"}]',
            '[{"name": "Bad Name", "base_url": "http://host/v1"}]',
            '[{"name": "default", "base_url": "http://host/v1"}]',
        ],
    )
    def test_a_bad_endpoints_setting_stops_the_start_with_the_setting_named(
        self, settings: Settings, raw: str
    ):
        with pytest.raises(ConfigurationError, match="CHATS_MODEL_ENDPOINTS"):
            env_endpoints(dataclasses.replace(settings, model_endpoints=raw))

    def test_no_endpoint_configured_means_the_offline_assistant_is_the_default(
        self, data_dir: Path
    ):
        service = ModelEndpoints(Settings.from_env({"CHATS_DATA_DIR": str(data_dir)}))
        try:
            assert service.default_ref() == OFFLINE_REF
            assert service.choices() == [
                ModelChoice("offline", "offline", OFFLINE_LABEL, True, True)
            ]
        finally:
            service.close()


class TestTheCatalogue:
    def test_models_come_from_each_endpoints_models_route_and_offline_is_always_listed(
        self, endpoints: ModelEndpoints, server: FakeOpenAI
    ):
        choices = endpoints.choices()
        assert [(c.endpoint, c.model, c.available) for c in choices] == [
            ("default", "fake-model", True),
            ("default", "other-model", True),
            ("offline", "offline", True),
        ]
        assert choices[-1].label == OFFLINE_LABEL and choices[-1].offline
        listing_request = server.requests[-1]
        assert listing_request.path == "/v1/models"
        assert listing_request.headers["Authorization"] == "Bearer test-key"

    def test_a_listing_is_reused_until_it_is_older_than_the_cache_time(
        self, endpoints: ModelEndpoints, server: FakeOpenAI, clock: Clock
    ):
        endpoints.choices()
        server.models = ["fake-model", "newer-model"]
        clock.now += 59
        assert "newer-model" not in {c.model for c in endpoints.choices()}
        assert endpoints.catalogue.requests == 1
        clock.now += 2
        assert "newer-model" in {c.model for c in endpoints.choices()}
        assert endpoints.catalogue.requests == 2

    def test_an_endpoint_that_is_down_shows_as_unavailable_and_the_rest_keep_working(
        self, endpoints: ModelEndpoints, admin: User
    ):
        endpoints.save_endpoint(admin.id, "gone", _dead_url(), models=["m1"])
        endpoints.save_endpoint(admin.id, "gone-too", _dead_url())
        choices = {(c.endpoint, c.model): c.available for c in endpoints.choices()}
        assert choices == {
            ("default", "fake-model"): True,
            ("default", "other-model"): True,
            ("gone", "m1"): False,
            ("gone-too", ""): False,
            ("offline", "offline"): True,
        }
        down = {listing.endpoint: listing for listing in endpoints.listings()}
        assert not down["gone"].available and "cannot reach" in down["gone"].error

    def test_an_endpoint_refusing_the_key_is_unavailable_with_the_status(
        self, endpoints: ModelEndpoints, server: FakeOpenAI
    ):
        server.models_status = 401
        (listing,) = endpoints.listings()
        assert not listing.available and "401" in listing.error

    def test_an_allow_list_narrows_what_an_endpoint_offers(
        self, endpoints: ModelEndpoints, admin: User, server: FakeOpenAI
    ):
        endpoints.save_endpoint(admin.id, "narrow", server.base_url, models=["other-model", "x"])
        offered = [c.model for c in endpoints.choices() if c.endpoint == "narrow"]
        assert offered == ["other-model"]


class TestKeysStayOnTheServer:
    def test_no_value_handed_to_the_ui_carries_a_key(
        self, endpoints: ModelEndpoints, admin: User, server: FakeOpenAI
    ):
        endpoints.save_endpoint(admin.id, "hosted", server.base_url, api_key="sk-secret-1")
        handed_out = [*endpoints.endpoints(), *endpoints.listings(), *endpoints.choices()]
        assert "sk-secret-1" not in repr(handed_out) and "test-key" not in repr(handed_out)
        assert {v.name: v.has_key for v in endpoints.endpoints()} == {
            "default": True,
            "hosted": True,
        }

    def test_saving_without_a_key_keeps_the_stored_one(
        self, endpoints: ModelEndpoints, admin: User, server: FakeOpenAI
    ):
        endpoints.save_endpoint(admin.id, "hosted", server.base_url, api_key="sk-secret-1")
        endpoints.save_endpoint(admin.id, "hosted", server.base_url, models=["fake-model"])
        assert endpoints.endpoint("hosted").api_key == "sk-secret-1"

    def test_an_endpoints_repr_leaves_its_key_out(self, endpoints: ModelEndpoints):
        assert "test-key" not in repr(endpoints.endpoint("default"))


class TestAdminOnlyWrites:
    def test_a_user_who_is_not_an_admin_cannot_add_an_endpoint(
        self, endpoints: ModelEndpoints, accounts: Accounts, admin: User, server: FakeOpenAI
    ):
        alice = accounts.create_user(admin.id, "alice", PASSWORD)
        with pytest.raises(PermissionDeniedError):
            endpoints.save_endpoint(alice.id, "mine", server.base_url)
        with pytest.raises(PermissionDeniedError):
            endpoints.save_endpoint("nobody", "mine", server.base_url)
        assert [e.name for e in endpoints.endpoints()] == ["default"]

    def test_a_demoted_admin_is_refused_at_the_next_write(
        self, endpoints: ModelEndpoints, accounts: Accounts, admin: User, server: FakeOpenAI
    ):
        other = accounts.create_user(admin.id, "second", PASSWORD, role="admin")
        endpoints.save_endpoint(other.id, "one", server.base_url)
        accounts.set_role(admin.id, other.id, "user")
        with pytest.raises(PermissionDeniedError):
            endpoints.delete_endpoint(other.id, "one")

    def test_an_admin_endpoint_persists_across_a_restart_and_can_be_deleted(
        self, settings: Settings, accounts: Accounts, admin: User, server: FakeOpenAI
    ):
        with_one = ModelEndpoints(settings, accounts)
        with_one.save_endpoint(admin.id, "local", server.base_url, models=["fake-model"])
        with_one.close()
        reopened = ModelEndpoints(settings, accounts)
        try:
            assert [e.name for e in reopened.endpoints()] == ["default", "local"]
            reopened.delete_endpoint(admin.id, "local")
            assert [e.name for e in reopened.endpoints()] == ["default"]
            with pytest.raises(EndpointNotFoundError):
                reopened.delete_endpoint(admin.id, "local")
        finally:
            reopened.close()


class TestBadEndpointInput:
    @pytest.mark.parametrize(
        ("name", "url", "field"),
        [
            ("local", "file:///etc/passwd", "base_url"),
            ("local", "ftp://host/v1", "base_url"),
            ("local", "http://", "base_url"),
            ("local", "http://user:pw@host/v1", "base_url"),
            ("Local Box", "http://host/v1", "name"),
            ("offline", "http://host/v1", "name"),
            ("default", "http://host/v1", "name"),
        ],
    )
    def test_a_bad_field_is_a_clear_error_and_nothing_is_saved(
        self, endpoints: ModelEndpoints, admin: User, name: str, url: str, field: str
    ):
        with pytest.raises(InvalidEndpointError) as caught:
            endpoints.save_endpoint(admin.id, name, url)
        assert caught.value.field == field
        assert [e.name for e in endpoints.endpoints()] == ["default"]


class TestCheckingAModel:
    def test_a_model_the_endpoint_lists_is_accepted(self, endpoints: ModelEndpoints):
        endpoints.check_model(ModelRef("default", "other-model"))
        endpoints.check_model(OFFLINE_REF)

    def test_a_model_the_endpoint_does_not_list_is_refused(self, endpoints: ModelEndpoints):
        with pytest.raises(UnknownModelError, match="does not list model 'nope'"):
            endpoints.check_model(ModelRef("default", "nope"))

    def test_an_unknown_endpoint_is_refused(self, endpoints: ModelEndpoints):
        with pytest.raises(UnknownModelError, match="no model endpoint is named 'elsewhere'"):
            endpoints.check_model(ModelRef("elsewhere", "fake-model"))

    def test_a_model_of_an_endpoint_that_is_down_is_accepted_unverified(
        self, endpoints: ModelEndpoints, admin: User
    ):
        endpoints.save_endpoint(admin.id, "gone", _dead_url())
        endpoints.check_model(ModelRef("gone", "anything"))

    def test_a_model_outside_the_allow_list_is_refused_even_when_the_endpoint_is_down(
        self, endpoints: ModelEndpoints, admin: User
    ):
        endpoints.save_endpoint(admin.id, "gone", _dead_url(), models=["m1"])
        with pytest.raises(UnknownModelError, match="not allowed"):
            endpoints.check_model(ModelRef("gone", "m2"))


class TestProviders:
    def test_a_provider_is_built_for_the_chosen_endpoint_and_model_and_shared(
        self, endpoints: ModelEndpoints, admin: User, server: FakeOpenAI
    ):
        endpoints.save_endpoint(admin.id, "hosted", server.base_url, api_key="sk-2")
        provider = endpoints.provider_for(ModelRef("hosted", "other-model"))
        assert isinstance(provider, OpenAICompatibleProvider)
        assert (provider.base_url, provider.model, provider.api_key) == (
            server.base_url,
            "other-model",
            "sk-2",
        )
        assert endpoints.provider_for(ModelRef("hosted", "other-model")) is provider
        assert endpoints.provider_for(OFFLINE_REF).offline

    def test_a_deleted_endpoint_gives_a_clear_error(self, endpoints: ModelEndpoints):
        with pytest.raises(UnknownModelError, match="any more"):
            endpoints.provider_for(ModelRef("removed", "m"))
