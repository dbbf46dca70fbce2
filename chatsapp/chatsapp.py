"""App entry point: builds the Reflex app, registers pages and the live-update bridge."""

import reflex as rx

from chatsapp import bridge, pages

app = rx.App()
pages.register(app)
bridge.install(app)
