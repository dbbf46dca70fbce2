"""The one interface every model backend implements, and the factory that picks one.

A provider is stateless between calls (safe to share across conversations and event loops):
each :meth:`ModelProvider.stream` call is one request. Errors are the ``ModelError`` family
from :mod:`backend.errors`; a provider never swallows a failure into a normal-looking reply.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol, runtime_checkable

from backend.config import Settings
from backend.models.types import ModelEvent, ModelRequest


@runtime_checkable
class ModelProvider(Protocol):
    """What the runtime needs from a model.

    ``name`` is the model id (``"llama3.1"``); ``label`` is what the UI shows, and for the
    offline assistant it says so. ``offline`` tells the runtime to use deterministic,
    model-free helpers for titles and summaries.
    """

    name: str
    label: str
    offline: bool

    def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream the reply: text deltas, complete tool calls, then one ``Finish``.

        An async generator: the runtime ``aclose()``s it when it stops early, which must
        release the request (close the HTTP response).
        """
        ...

    async def complete(self, prompt: str) -> str:
        """One-shot text completion (titles, summaries); no tools, no context."""
        ...

    def retrieval_query(self, user_text: str) -> str | None:
        """What to search the user's past chats for before this turn (``None``: nothing).

        Text models answer from their own knowledge and return ``None``; the offline
        assistant can only answer from retrieved material, so it asks for it.
        """
        ...


def provider_from_settings(settings: Settings) -> ModelProvider:
    """The configured OpenAI-compatible client, or the offline assistant when none is set."""
    if settings.offline_model:
        from backend.models.offline import OfflineAssistant

        if settings.offline_chunk_delay_s is not None:
            return OfflineAssistant(chunk_delay_s=settings.offline_chunk_delay_s)
        return OfflineAssistant()
    from backend.models.openai_compatible import OpenAICompatibleProvider

    return OpenAICompatibleProvider.from_settings(settings)


def provider_for_endpoint(
    settings: Settings, *, base_url: str, model: str, api_key: str
) -> ModelProvider:
    """A client of one endpoint's model with the configured limits (``backend.endpoints``)."""
    from backend.models.openai_compatible import OpenAICompatibleProvider

    return OpenAICompatibleProvider.for_endpoint(
        settings, base_url=base_url, model=model, api_key=api_key
    )
