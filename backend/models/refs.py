"""Which model answers: an endpoint's name and a model name it serves, as one plain value.

A :class:`ModelRef` is what a conversation record, a run, an agent version and a message's
metadata store, and what a model picker hands back. It carries no URL and no key: those stay
with the endpoint's configuration on the server (``backend.endpoints``), so a ref can be shown
to a browser as it is.

The offline assistant is the endpoint ``"offline"`` with the model ``"offline"``; the endpoint
``CHATS_MODEL_BASE_URL`` configures is ``"default"``.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend.models.offline import OFFLINE_MODEL_NAME

OFFLINE_ENDPOINT = "offline"
DEFAULT_ENDPOINT = "default"


@dataclass(frozen=True, slots=True)
class ModelRef:
    """One model of one endpoint (no secrets: safe to hand to the UI)."""

    endpoint: str
    model: str

    @property
    def offline(self) -> bool:
        return self.endpoint == OFFLINE_ENDPOINT

    def __str__(self) -> str:
        return f"{self.model}@{self.endpoint}"


OFFLINE_REF = ModelRef(OFFLINE_ENDPOINT, OFFLINE_MODEL_NAME)
