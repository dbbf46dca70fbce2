"""App entry point: builds the Reflex app, registers pages and the live-update bridge.

The bridge is installed here, with the shared states it writes into, so neither the states nor
the bridge import each other.
"""

import reflex as rx

from chatsapp import bridge, pages
from chatsapp.csp import HEADER, META_POLICY, ContentSecurityPolicy
from chatsapp.states.conversation import SharedConversationState
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.memory import SharedMemoryState

app = rx.App(
    api_transformer=ContentSecurityPolicy,
    head_components=[rx.el.meta(http_equiv=HEADER, content=META_POLICY)],
)
pages.register(app)
bridge.install(
    app,
    bridge.LiveStates(
        directory=SharedDirectoryState,
        memory=SharedMemoryState,
        conversation=SharedConversationState,
    ),
)
