"""Reflex configuration. Application settings live in backend.config (environment)."""

import reflex as rx
from reflex_base.constants import StateManagerMode

from backend.config import Settings

_settings = Settings.from_env()

config = rx.Config(
    app_name="chatsapp",
    frontend_port=_settings.frontend_port,
    backend_port=_settings.backend_port,
    telemetry_enabled=False,
    # UI state is a cache of the SQLite files: keep it in memory (or Redis across workers),
    # never in .states/ on disk, where a stale sidebar would outlive a change of data dir.
    state_manager_mode=StateManagerMode.REDIS if _settings.redis_url else StateManagerMode.MEMORY,
    show_built_with_reflex=False,
    # CORS and socket.io name only the configured origins; unset, every other origin is
    # refused before either answers (chatsapp.routes.origins.OriginGate, by the request's Host).
    cors_allowed_origins=_settings.allowed_origins or ("*",),
    plugins=[
        rx.plugins.RadixThemesPlugin(
            theme=rx.theme(appearance="inherit", accent_color="iris", radius="medium")
        )
    ],
    disable_plugins=[rx.plugins.SitemapPlugin],
)
