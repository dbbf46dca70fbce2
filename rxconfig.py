"""Reflex configuration. Application settings live in backend.config (environment)."""

import reflex as rx

from backend.config import Settings

_settings = Settings.from_env()

config = rx.Config(
    app_name="chatsapp",
    frontend_port=_settings.frontend_port,
    backend_port=_settings.backend_port,
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[
        rx.plugins.RadixThemesPlugin(
            theme=rx.theme(appearance="inherit", accent_color="iris", radius="medium")
        )
    ],
    disable_plugins=[rx.plugins.SitemapPlugin],
)
