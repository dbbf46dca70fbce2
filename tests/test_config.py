"""Settings come from the environment, with embedded offline defaults."""

from pathlib import Path

import pytest

from backend.config import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MODEL_MAX_LINE_BYTES,
    DEFAULT_MODEL_MAX_REPLY_BYTES,
    DEFAULT_MODEL_TOTAL_TIMEOUT_S,
    Settings,
)


class TestDefaults:
    def test_an_empty_environment_gives_the_embedded_offline_configuration(self):
        settings = Settings.from_env({})
        assert settings.data_dir == Path("data")
        assert settings.offline_model
        assert settings.max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES == 256 * 1024

    def test_a_model_base_url_switches_off_the_offline_model(self):
        settings = Settings.from_env({"CHATS_MODEL_BASE_URL": "http://127.0.0.1:11434/v1/"})
        assert not settings.offline_model
        assert settings.model_base_url == "http://127.0.0.1:11434/v1"


class TestBadValues:
    def test_a_non_numeric_port_is_a_clear_error(self):
        with pytest.raises(ValueError, match="CHATS_FRONTEND_PORT must be an integer"):
            Settings.from_env({"CHATS_FRONTEND_PORT": "eighty"})


class TestAccountSettings:
    def test_accounts_default_to_local_sign_in_with_thirty_day_sessions(self):
        settings = Settings.from_env({})
        assert settings.auth_mode == "local"
        assert settings.sign_in_ttl_s == 30 * 24 * 3600
        assert settings.password_hash_profile == "default"
        assert (settings.auth_header, settings.trusted_proxies) == ("", ())

    def test_header_mode_reads_its_header_and_proxy_list(self):
        settings = Settings.from_env(
            {
                "CHATS_AUTH": "Header",
                "CHATS_AUTH_HEADER": " Remote-User ",
                "CHATS_TRUSTED_PROXIES": "10.0.0.0/8, ::1,,",
            }
        )
        assert settings.auth_mode == "header"
        assert settings.auth_header == "Remote-User"
        assert settings.trusted_proxies == ("10.0.0.0/8", "::1")

    def test_an_unknown_auth_mode_is_a_clear_error(self):
        with pytest.raises(ValueError, match="CHATS_AUTH must be one of local, header, none"):
            Settings.from_env({"CHATS_AUTH": "ldap"})


class TestModelLimits:
    def test_the_model_limits_have_safe_defaults(self):
        settings = Settings.from_env({})
        assert settings.model_timeout_s == 60
        assert settings.model_total_timeout_s == DEFAULT_MODEL_TOTAL_TIMEOUT_S
        assert settings.model_max_reply_bytes == DEFAULT_MODEL_MAX_REPLY_BYTES == 1024 * 1024
        assert settings.model_max_line_bytes == DEFAULT_MODEL_MAX_LINE_BYTES
        # A server may send a whole reply in one chunk: the line limit must let the reply
        # limit be reached (and the reply be cut) rather than fail first.
        assert settings.model_max_line_bytes > 2 * settings.model_max_reply_bytes

    def test_the_model_limits_are_read_from_the_environment(self):
        settings = Settings.from_env(
            {
                "CHATS_MODEL_TOTAL_TIMEOUT_S": "120.5",
                "CHATS_MODEL_MAX_REPLY_BYTES": "2048",
                "CHATS_MODEL_MAX_LINE_BYTES": "8192",
            }
        )
        assert settings.model_total_timeout_s == 120.5
        assert settings.model_max_reply_bytes == 2048
        assert settings.model_max_line_bytes == 8192

    @pytest.mark.parametrize(
        "key",
        [
            "CHATS_MODEL_TIMEOUT_S",
            "CHATS_MODEL_TOTAL_TIMEOUT_S",
            "CHATS_MODEL_MAX_REPLY_BYTES",
            "CHATS_MODEL_MAX_LINE_BYTES",
        ],
    )
    def test_a_limit_of_zero_or_less_is_a_clear_error(self, key):
        with pytest.raises(ValueError, match=f"{key} must be positive"):
            Settings.from_env({key: "0"})


class TestImportLimit:
    def test_imports_default_to_one_gibibyte(self):
        assert Settings.from_env({}).max_import_bytes == 1024**3

    def test_the_import_limit_is_read_from_the_environment(self):
        assert Settings.from_env({"CHATS_MAX_IMPORT_BYTES": "4096"}).max_import_bytes == 4096

    def test_an_import_limit_of_zero_is_a_clear_error(self):
        with pytest.raises(ValueError, match="CHATS_MAX_IMPORT_BYTES must be positive"):
            Settings.from_env({"CHATS_MAX_IMPORT_BYTES": "0"})


class TestServerWorkers:
    def test_one_server_process_by_default(self):
        assert Settings.from_env({}).workers == 1

    def test_several_workers_share_the_ui_state_in_redis(self):
        env = {"CHATS_WORKERS": "4", "REFLEX_REDIS_URL": "redis://127.0.0.1:6379"}
        assert Settings.from_env(env).workers == 4

    def test_several_workers_without_redis_are_refused_with_the_reason(self):
        with pytest.raises(ValueError, match="CHATS_WORKERS=2 needs REFLEX_REDIS_URL"):
            Settings.from_env({"CHATS_WORKERS": "2"})

    def test_no_workers_is_not_a_setting(self):
        with pytest.raises(ValueError, match="CHATS_WORKERS must be positive"):
            Settings.from_env({"CHATS_WORKERS": "0"})
