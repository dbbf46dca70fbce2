"""``ModelEndpoints``: every model endpoint of the server, what they offer, and clients for them.

What the UI calls (synchronous; a Reflex handler offloads each call with ``asyncio.to_thread``
except :meth:`ModelEndpoints.provider_for`, which does no I/O):

* ``choices()`` → ``list[ModelChoice]`` for a model picker: every offered model of every
  endpoint (unavailable ones marked), and the offline assistant, always, labelled as such.
* ``check_model(ref)`` → ``None`` or :class:`~backend.errors.UnknownModelError`: before a
  chat or an agent stores a model.
* ``endpoints()`` / ``listings()`` → the admin page (``EndpointView``: never a key).
* ``save_endpoint(actor_id, ...)`` / ``delete_endpoint(actor_id, name)``: admin only (the
  actor is checked through ``backend.accounts`` on every call, never cached); all fields are
  checked before anything is written.
* ``provider_for(ref)`` → the :class:`~backend.models.ModelProvider` the runtime streams from.

Environment endpoints (``default`` from ``CHATS_MODEL_BASE_URL``, others from
``CHATS_MODEL_ENDPOINTS``) come first and are read-only here; an admin's endpoint may not take
an environment endpoint's name. Keys stay on the server: no value handed out carries one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from backend.accounts import CONSOLE_ACTOR, User
from backend.clock import now_ms
from backend.config import Settings
from backend.data_folder import SETTINGS_FILE
from backend.endpoints.catalogue import EndpointListing, ModelCatalogue
from backend.endpoints.endpoint import (
    Endpoint,
    EndpointView,
    check_name,
    checked_endpoint,
    env_endpoints,
)
from backend.endpoints.store import EndpointStore
from backend.errors import (
    EndpointNotFoundError,
    InvalidEndpointError,
    PermissionDeniedError,
    UnknownModelError,
)
from backend.models import (
    OFFLINE_LABEL,
    OFFLINE_REF,
    ModelProvider,
    ModelRef,
    provider_for_endpoint,
    provider_from_settings,
)
from backend.storage import Database

MAX_CACHED_PROVIDERS = 64
MAX_PARALLEL_LISTINGS = 8


class AdminDirectory(Protocol):
    """Who is an admin now (``backend.accounts.Accounts`` is one)."""

    def user(self, user_id: str) -> User | None: ...


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """One entry of a model picker (no URL, no key)."""

    endpoint: str
    model: str
    label: str
    available: bool
    offline: bool = False

    @property
    def ref(self) -> ModelRef:
        return ModelRef(self.endpoint, self.model)


def choice_label(ref: ModelRef) -> str:
    """How a model is named in the picker and under each reply."""
    return OFFLINE_LABEL if ref.offline else f"{ref.model} · {ref.endpoint}"


class ModelEndpoints:
    """See the module docstring. One per server process; thread-safe."""

    def __init__(
        self,
        settings: Settings,
        accounts: AdminDirectory | None = None,
        *,
        catalogue: ModelCatalogue | None = None,
    ) -> None:
        self.settings = settings
        self._accounts = accounts
        self._env = env_endpoints(settings)  # a bad CHATS_MODEL_ENDPOINTS fails the start
        self.catalogue = catalogue or ModelCatalogue()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self._db = Database(settings.data_dir / SETTINGS_FILE)
        try:
            self._store = EndpointStore(self._db)
        except BaseException:
            self._db.close()
            raise
        self._providers_lock = threading.Lock()
        self._providers: OrderedDict[tuple[str, str, str, str], ModelProvider] = OrderedDict()
        self._offline = provider_from_settings(replace(settings, model_base_url=""))

    def close(self) -> None:
        self._db.close()

    # ── reads ───────────────────────────────────────────────────────

    def all_endpoints(self) -> list[Endpoint]:
        """Environment endpoints first, then the admin's (by name). Server side only: keys."""
        env_names = {e.name for e in self._env}
        return [*self._env, *(e for e in self._store.list() if e.name not in env_names)]

    def endpoints(self) -> list[EndpointView]:
        return [endpoint.view() for endpoint in self.all_endpoints()]

    def endpoint(self, name: str) -> Endpoint:
        for endpoint in self._env:
            if endpoint.name == name:
                return endpoint
        found = self._store.load(name)
        if found is None:
            raise EndpointNotFoundError(name)
        return found

    def listings(self, *, refresh: bool = False) -> list[EndpointListing]:
        """Each endpoint's listing, asked side by side: one slow endpoint costs its own
        timeout once, not one timeout per endpoint in a row."""
        endpoints = self.all_endpoints()
        if len(endpoints) <= 1:
            return [self.catalogue.listing(e, refresh=refresh) for e in endpoints]
        with ThreadPoolExecutor(max_workers=min(len(endpoints), MAX_PARALLEL_LISTINGS)) as pool:
            return list(pool.map(lambda e: self.catalogue.listing(e, refresh=refresh), endpoints))

    def choices(self, *, refresh: bool = False) -> list[ModelChoice]:
        """Every model on offer, endpoint by endpoint, then the offline assistant (always)."""
        found: list[ModelChoice] = []
        for listing in self.listings(refresh=refresh):
            if not listing.models:  # down with no allow-list: the endpoint itself, greyed
                if not listing.available:
                    found.append(ModelChoice(listing.endpoint, "", listing.endpoint, False))
                continue
            for model in listing.models:
                ref = ModelRef(listing.endpoint, model)
                found.append(ModelChoice(ref.endpoint, model, choice_label(ref), listing.available))
        found.append(
            ModelChoice(OFFLINE_REF.endpoint, OFFLINE_REF.model, OFFLINE_LABEL, True, True)
        )
        return found

    def default_ref(self) -> ModelRef:
        """What a chat uses when neither it nor its agent names a model."""
        for endpoint in self._env:
            if endpoint.default_model:
                return ModelRef(endpoint.name, endpoint.default_model)
        return OFFLINE_REF

    def check_model(self, ref: ModelRef) -> None:
        """Refuse a model that cannot answer; one of a down endpoint is accepted unverified."""
        if ref.offline:
            if ref != OFFLINE_REF:
                raise UnknownModelError(
                    ref.endpoint, ref.model, "the offline assistant has one model"
                )
            return
        try:
            endpoint = self.endpoint(ref.endpoint)
        except EndpointNotFoundError:
            raise UnknownModelError(
                ref.endpoint, ref.model, f"no model endpoint is named {ref.endpoint!r}"
            ) from None
        if not ref.model.strip():
            raise UnknownModelError(ref.endpoint, ref.model, "choose a model")
        if endpoint.models and ref.model not in endpoint.models:
            raise UnknownModelError(
                ref.endpoint, ref.model, f"{ref.model!r} is not allowed on {ref.endpoint!r}"
            )
        if ref.model == endpoint.default_model:
            return  # configured by the operator: offered even when the server does not list it
        listing = self.catalogue.listing(endpoint)
        if listing.available and ref.model not in listing.models:
            raise UnknownModelError(ref.endpoint, ref.model)

    def provider_for(self, ref: ModelRef) -> ModelProvider:
        """A client for ``ref`` (shared per endpoint and model: it pools connections)."""
        if ref.offline:
            return self._offline
        try:
            endpoint = self.endpoint(ref.endpoint)
        except EndpointNotFoundError:
            raise UnknownModelError(
                ref.endpoint, ref.model, f"no model endpoint is named {ref.endpoint!r} any more"
            ) from None
        key = (endpoint.name, endpoint.base_url, endpoint.api_key, ref.model)
        with self._providers_lock:
            found = self._providers.get(key)
            if found is None:
                found = provider_for_endpoint(
                    self.settings,
                    base_url=endpoint.base_url,
                    model=ref.model,
                    api_key=endpoint.api_key,
                )
                self._providers[key] = found
                while len(self._providers) > MAX_CACHED_PROVIDERS:
                    self._providers.popitem(last=False)
            else:
                self._providers.move_to_end(key)
        return found

    async def aclose(self) -> None:
        """Close this event loop's connection pools (the runtime calls it on shutdown)."""
        with self._providers_lock:
            providers = list(self._providers.values())
        for provider in providers:
            closer = getattr(provider, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        await asyncio.sleep(0)

    # ── admin writes ────────────────────────────────────────────────

    def save_endpoint(
        self,
        actor_id: str,
        name: str,
        base_url: str,
        *,
        api_key: str | None = None,
        models: Sequence[str] = (),
    ) -> EndpointView:
        """Add or change an endpoint. ``api_key=None`` keeps the stored key (the page never
        shows it, so it cannot send it back); ``""`` removes it."""
        self._require_admin(actor_id, "configure model endpoints")
        name = check_name(name)
        if any(e.name == name for e in self._env):
            raise InvalidEndpointError("name", f"{name!r} is configured by the environment")
        with self._db.transaction():
            old = self._store.load(name)
            key = api_key if api_key is not None else (old.api_key if old else "")
            endpoint = checked_endpoint(name, base_url, key, list(models))
            self._store.save(endpoint, now_ms())
        self.catalogue.forget(name)
        return endpoint.view()

    def delete_endpoint(self, actor_id: str, name: str) -> None:
        """Remove an admin's endpoint; chats that used it fail their next turn clearly."""
        self._require_admin(actor_id, "configure model endpoints")
        if any(e.name == name for e in self._env):
            raise InvalidEndpointError("name", f"{name!r} is configured by the environment")
        with self._db.transaction():
            if not self._store.delete(name):
                raise EndpointNotFoundError(name)
        self.catalogue.forget(name)

    def _require_admin(self, actor_id: str, action: str) -> None:
        if actor_id == CONSOLE_ACTOR:
            return
        user = self._accounts.user(actor_id) if self._accounts is not None else None
        if user is None or not user.is_admin:
            raise PermissionDeniedError(action)
