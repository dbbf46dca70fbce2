"""Which model answers a turn, and where the runtime gets a client for it.

A run's model is fixed when it is claimed, in this order: the chat's own choice (the model
picker, ``Conversation.model``), else the bound agent version's model, else the server's
default. It is recorded on the run (``RunRecord.model``), so the reply names the model that
wrote it whoever finishes it (a recovery in another process too), and a switch in the picker
applies from the next claimed turn, never to one already streaming.

:class:`ModelSource` is the seam: ``backend.endpoints.ModelEndpoints`` implements it for a
server with endpoints; :class:`SingleModel` serves one provider (a runtime built with
``model=``, the tests).
"""

from __future__ import annotations

from typing import Protocol

from backend.errors import UnknownModelError
from backend.models import DEFAULT_ENDPOINT, OFFLINE_REF, ModelProvider, ModelRef
from backend.runtime.agents import AgentDefinition
from backend.runtime.records import Conversation


class ModelSource(Protocol):
    """What the runtime needs to know about models."""

    def default_ref(self) -> ModelRef: ...

    def provider_for(self, ref: ModelRef) -> ModelProvider:
        """A client for ``ref``; :class:`UnknownModelError` when nothing serves it now."""
        ...

    def check_model(self, ref: ModelRef) -> None:
        """Refuse (``UnknownModelError``) a model a chat may not choose."""
        ...


class SingleModel:
    """Every chat answered by one provider."""

    def __init__(self, provider: ModelProvider) -> None:
        self.provider = provider
        self.ref = OFFLINE_REF if provider.offline else ModelRef(DEFAULT_ENDPOINT, provider.name)

    def default_ref(self) -> ModelRef:
        return self.ref

    def provider_for(self, ref: ModelRef) -> ModelProvider:
        self.check_model(ref)
        return self.provider

    def check_model(self, ref: ModelRef) -> None:
        if ref != self.ref:
            raise UnknownModelError(ref.endpoint, ref.model, f"only {self.ref} is configured")


def model_for_turn(record: Conversation, agent: AgentDefinition, source: ModelSource) -> ModelRef:
    """The chat's choice, else the agent's, else the default (see the module docstring)."""
    return record.model or agent.model_ref or source.default_ref()
