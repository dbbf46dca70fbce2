"""Which worker process serves this tab (multi-worker tests read it; hidden otherwise).

The model a chat uses is shown by the model picker alone (``chatsapp.states.models``): the
header no longer carries a second, server-wide model label that could contradict it.
"""

from __future__ import annotations

import os

import reflex as rx

from chatsapp.services import services


class WorkerTabState(rx.State):
    """Per tab: the serving worker's pid, when the settings expose it."""

    worker: str = ""

    @rx.event
    def load(self) -> None:
        self.worker = str(os.getpid()) if services().settings.expose_worker_id else ""
