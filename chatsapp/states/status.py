"""What model answers: shown read-only, with a clear label when it is the offline assistant."""

from __future__ import annotations

import os

import reflex as rx

from chatsapp.identity import current_user_id
from chatsapp.services import services


class ModelTabState(rx.State):
    """Per tab: the model label shown in the header, read when the page loads."""

    offline: bool = True
    label: str = ""
    details: str = ""
    worker: str = ""

    @rx.event
    def load(self) -> None:
        info = services().runtime(current_user_id()).model_info()
        self.offline = bool(info.offline)
        self.label = str(info.label)
        settings = services().settings
        self.worker = str(os.getpid()) if settings.expose_worker_id else ""
        self.details = (
            "No model configured: set CHATS_MODEL_BASE_URL to use an OpenAI-compatible server."
            if info.offline
            else f"{settings.model_base_url} · model {settings.model_name or '(server default)'}"
        )
