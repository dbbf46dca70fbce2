"""What a model endpoint is, how one is checked, and the ones the environment configures.

Pure: no I/O. An :class:`Endpoint` holds its key; it never leaves the server. What the UI
gets is an :class:`EndpointView` (``has_key`` instead of the key).

Environment (``backend.config.Settings``):

* ``CHATS_MODEL_BASE_URL`` / ``CHATS_MODEL_API_KEY`` / ``CHATS_MODEL``: the endpoint named
  ``default`` (its model is the default model of new chats), as before.
* ``CHATS_MODEL_ENDPOINTS``: more endpoints, a JSON list of objects
  ``{"name", "base_url", "api_key"?, "models"?}`` (``models``: an allow-list; empty or missing
  means every model the endpoint lists). A bad entry stops the start with a clear error.

Rules: a name is 1-32 of ``a-z 0-9 _ -`` starting with a letter or digit (``offline`` is the
built-in assistant's and cannot be taken); a base URL is ``http`` or ``https`` with a host; an
allow-list has at most :data:`MAX_ALLOWED_MODELS` names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from backend.config import Settings
from backend.errors import ConfigurationError, InvalidEndpointError
from backend.models import DEFAULT_ENDPOINT, OFFLINE_ENDPOINT

EndpointSource = Literal["env", "admin"]
ENDPOINTS_SETTING = "CHATS_MODEL_ENDPOINTS"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
MAX_URL_CHARS = 2_000
MAX_KEY_CHARS = 4_000
MAX_ALLOWED_MODELS = 200
MAX_MODEL_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An OpenAI-compatible server. ``models`` empty: every model it lists is offered."""

    name: str
    base_url: str
    api_key: str = field(default="", repr=False)  # never in a log line or a traceback
    models: tuple[str, ...] = ()
    source: EndpointSource = "admin"
    default_model: str = ""  # the env default endpoint's CHATS_MODEL

    def view(self) -> EndpointView:
        return EndpointView(
            name=self.name,
            base_url=self.base_url,
            has_key=bool(self.api_key),
            models=self.models,
            source=self.source,
        )


@dataclass(frozen=True, slots=True)
class EndpointView:
    """An endpoint as the admin page shows it: never the key, only whether there is one."""

    name: str
    base_url: str
    has_key: bool
    models: tuple[str, ...]
    source: EndpointSource  # "env" ones are read-only in the app


def check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidEndpointError(
            "name",
            "use 1-32 lower-case letters, digits, '-' or '_', starting with one of the first two",
        )
    if name == OFFLINE_ENDPOINT:
        raise InvalidEndpointError("name", f"{OFFLINE_ENDPOINT!r} is the built-in assistant's")
    return name


def check_base_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip():
        raise InvalidEndpointError("base_url", "a URL is required")
    url = url.strip().rstrip("/")
    if len(url) > MAX_URL_CHARS:
        raise InvalidEndpointError("base_url", f"longer than {MAX_URL_CHARS} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise InvalidEndpointError(
            "base_url", f"must start with http:// or https://, not {parts.scheme or url!r}"
        )
    if not parts.hostname:
        raise InvalidEndpointError("base_url", "has no host")
    if parts.username or parts.password:
        raise InvalidEndpointError("base_url", "put the key in the key field, not in the URL")
    return url


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidEndpointError("api_key", "must be text")
    key = key.strip()
    if len(key) > MAX_KEY_CHARS or any(ord(c) < 32 for c in key):
        raise InvalidEndpointError("api_key", "is not a usable bearer key")
    return key


def check_models(models: object) -> tuple[str, ...]:
    if models is None:
        return ()
    if isinstance(models, str) or not isinstance(models, Iterable):
        raise InvalidEndpointError("models", "must be a list of model names")
    names: list[str] = []
    for model in models:
        if not isinstance(model, str) or not model.strip():
            raise InvalidEndpointError("models", "every model name must be non-empty text")
        if len(model) > MAX_MODEL_NAME_CHARS:
            raise InvalidEndpointError("models", f"a name is longer than {MAX_MODEL_NAME_CHARS}")
        if model.strip() not in names:
            names.append(model.strip())
    if len(names) > MAX_ALLOWED_MODELS:
        raise InvalidEndpointError("models", f"more than {MAX_ALLOWED_MODELS} names")
    return tuple(names)


def checked_endpoint(
    name: object,
    base_url: object,
    api_key: object = "",
    models: object = None,
    *,
    source: EndpointSource = "admin",
) -> Endpoint:
    """An :class:`Endpoint` from untrusted fields, or :class:`InvalidEndpointError`."""
    return Endpoint(
        name=check_name(name),
        base_url=check_base_url(base_url),
        api_key=check_key(api_key or ""),
        models=check_models(models),
        source=source,
    )


def env_endpoints(settings: Settings) -> list[Endpoint]:
    """The endpoints the environment configures, the default one first (none: offline only)."""
    found: list[Endpoint] = []
    if settings.model_base_url:
        try:
            default = checked_endpoint(
                DEFAULT_ENDPOINT, settings.model_base_url, settings.model_api_key, source="env"
            )
        except InvalidEndpointError as exc:
            raise _bad("CHATS_MODEL_BASE_URL", str(exc)) from exc
        found.append(_with_default_model(default, settings.model_name or "default"))
    for entry in _entries(settings.model_endpoints):
        try:
            endpoint = checked_endpoint(
                entry.get("name"),
                entry.get("base_url"),
                entry.get("api_key", ""),
                entry.get("models"),
                source="env",
            )
        except InvalidEndpointError as exc:
            raise _bad(ENDPOINTS_SETTING, str(exc)) from exc
        if any(e.name == endpoint.name for e in found):
            raise _bad(ENDPOINTS_SETTING, f"endpoint {endpoint.name!r} given twice")
        found.append(endpoint)
    return found


def _bad(setting: str, message: str) -> ConfigurationError:
    return ConfigurationError(setting, f"{setting}: {message}")


def _with_default_model(endpoint: Endpoint, model: str) -> Endpoint:
    return Endpoint(
        endpoint.name, endpoint.base_url, endpoint.api_key, endpoint.models, "env", model
    )


def _entries(raw: str) -> Sequence[dict[str, Any]]:
    if not raw:
        return ()
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _bad(ENDPOINTS_SETTING, f"is not JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise _bad(ENDPOINTS_SETTING, "must be a JSON list of objects")
    return value
