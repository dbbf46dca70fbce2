"""The admin's model endpoints page: what each endpoint offers now, add, change, remove.

Every write names the acting person and ``backend.endpoints`` checks that they are an admin at
that moment; keys are write-only here (an endpoint shows only whether it has one).
"""

from __future__ import annotations

import dataclasses

import reflex as rx

from backend.errors import ChatsError
from chatsapp.auth.identity import current_viewer
from chatsapp.services import offload, services


@dataclasses.dataclass
class EndpointRow:
    name: str = ""
    base_url: str = ""
    has_key: bool = False
    models: str = ""  # the allow-list, comma separated ("" : whatever the server lists)
    from_env: bool = False
    available: bool = False
    offered: str = ""  # what its /models lists now
    error: str = ""


class EndpointsAdminTabState(rx.State):
    """Per tab, admins only: the endpoints and the form's last outcome."""

    endpoints: list[EndpointRow] = []
    message: str = ""
    failed: bool = False
    allowed: bool = False

    async def _reload(self, *, refresh: bool = False) -> None:
        eps = services().endpoints()
        views = await offload(eps.endpoints)
        listings = {
            listing.endpoint: listing
            for listing in await offload(lambda: eps.listings(refresh=refresh))
        }
        rows = []
        for view in views:
            listing = listings.get(view.name)
            rows.append(
                EndpointRow(
                    name=view.name,
                    base_url=view.base_url,
                    has_key=view.has_key,
                    models=", ".join(view.models),
                    from_env=view.source == "env",
                    available=bool(listing and listing.available),
                    offered=", ".join(listing.models) if listing else "",
                    error=listing.error if listing else "",
                )
            )
        self.endpoints = rows

    @rx.event
    async def load(self) -> None:
        self.message, self.failed = "", False
        self.allowed = current_viewer().is_admin
        if self.allowed:
            await self._reload()

    @rx.event
    async def refresh(self) -> None:
        if self.allowed:
            await self._reload(refresh=True)

    @rx.event
    async def save(self, form: dict[str, str]) -> None:
        """Add or change an endpoint; an empty key field keeps the stored key."""
        key = str(form.get("api_key", ""))
        models = [m.strip() for m in str(form.get("models", "")).split(",") if m.strip()]
        try:
            saved = await offload(
                services().endpoints().save_endpoint,
                current_viewer().user_id,
                str(form.get("name", "")).strip(),
                str(form.get("base_url", "")),
                api_key=key or None,
                models=models,
            )
        except ChatsError as exc:
            self.message, self.failed = f"Not saved. {exc}", True
            return
        self.message, self.failed = f"Saved endpoint {saved.name}.", False
        await self._reload(refresh=True)

    @rx.event
    async def delete(self, name: str) -> None:
        try:
            await offload(services().endpoints().delete_endpoint, current_viewer().user_id, name)
        except ChatsError as exc:
            self.message, self.failed = str(exc), True
            return
        self.message, self.failed = f"Removed endpoint {name}.", False
        await self._reload()
