"""Settings come from the environment, with embedded offline defaults."""

from pathlib import Path

import pytest

from backend.config import DEFAULT_MAX_MESSAGE_BYTES, Settings


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
