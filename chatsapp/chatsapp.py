"""App entry point: builds the Reflex app, registers pages, the live-update bridge and the guard.

The bridge is installed here, with the shared states it writes into, so neither the states nor
the bridge import each other. Every event passes :class:`chatsapp.auth.guard.AuthGuard` first
(who is asking, checked on each event) and every socket connect :mod:`chatsapp.auth.token_binding`
(a tab's token is linked only for its own person); the sign-in and export routes are mounted
in front of Reflex's own app, ``GET /`` goes straight to the latest chat, and every HTTP
response carries the Content-Security-Policy. A request or socket from another origin is
refused first (:mod:`chatsapp.routes.origins`), and an upload is checked from its own request
before its body is read (:mod:`chatsapp.routes.upload_guard`).
"""

import contextlib
from collections.abc import AsyncIterator

import reflex as rx

from chatsapp import pages
from chatsapp.auth import token_binding
from chatsapp.auth.guard import AuthGuard
from chatsapp.auth.signout_watch import SignoutWatch
from chatsapp.hosting import collector, log_redaction, task_dump
from chatsapp.live import bridge, sharing_live
from chatsapp.live.temporary_keeper import TemporaryKeeper
from chatsapp.routes.account_forms import auth_routes
from chatsapp.routes.csp import HEADER, META_POLICY, ContentSecurityPolicy
from chatsapp.routes.exports import export_routes
from chatsapp.routes.home_redirect import LatestChatRedirect
from chatsapp.routes.origins import OriginGate
from chatsapp.routes.share_link import share_link_routes
from chatsapp.routes.upload_guard import (
    UploadGuard,
    attachments_cap,
    import_cap,
    one_attachment_cap,
)
from chatsapp.services import services
from chatsapp.states.account import AccountTabState, AuthPageTabState
from chatsapp.states.archive import SharedArchiveState
from chatsapp.states.chat_people import SharedChatPeopleState
from chatsapp.states.chat_views import CHAT_VIEWS
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.memory import SharedMemoryState
from chatsapp.states.models import SharedChatSettingsState
from chatsapp.states.projects import ProjectsTabState, SharedProjectsState
from chatsapp.states.settings import SettingsTabState
from chatsapp.states.shared_conversation import SharedConversationState
from chatsapp.states.shared_with_me import SharedWithMeState

# An on-screen keyboard resizes the layout (not just the visual viewport), so the composer,
# last in a 100dvh column, stays above it (assets/layout.css).
VIEWPORT = "width=device-width, initial-scale=1, interactive-widget=resizes-content"

# Each upload handler of the app, and the most its body may hold (any other: refused).
UPLOAD_CAPS = {
    f"{ChatTabState.get_full_name()}.handle_upload": attachments_cap,
    f"{SettingsTabState.get_full_name()}.upload_import": import_cap,
    f"{ProjectsTabState.get_full_name()}.upload_file": one_attachment_cap,
}

app: rx.App = rx.App(
    # Each wraps the ones before it: the origin gate is outermost, the upload guard next.
    api_transformer=[
        auth_routes(),
        export_routes(),
        share_link_routes(),
        LatestChatRedirect,
        ContentSecurityPolicy,
        UploadGuard.install(lambda: app, UPLOAD_CAPS),
        OriginGate,
    ],
    head_components=[
        rx.el.meta(http_equiv=HEADER, content=META_POLICY),
        rx.el.meta(name="viewport", content=VIEWPORT),
    ],
    stylesheets=["/layout.css"],
)
# First, so no other middleware (hydration included) runs for an event the guard refuses.
signout = SignoutWatch(app, AccountTabState)
app.add_middleware(AuthGuard(public_states=(AuthPageTabState,), signout=signout), index=0)
pages.register(app)


@app.register_lifespan_task
@contextlib.asynccontextmanager
async def _collect_young_less_often() -> AsyncIterator[None]:
    """In each worker (after the fork): the slowest live updates waited on full collections."""
    collector.collect_young_less_often()
    yield


@app.register_lifespan_task
@contextlib.asynccontextmanager
async def _dump_tasks_on_signal() -> AsyncIterator[None]:
    """In each worker: ``kill -USR1`` writes what every task of its event loop waits on."""
    task_dump.install()
    yield


@app.register_lifespan_task
@contextlib.asynccontextmanager
async def _save_streaming_replies_on_stop() -> AsyncIterator[None]:
    """Uvicorn runs this on SIGTERM: partial replies are saved and marked interrupted."""
    yield
    await services().shutdown()


@app.register_lifespan_task
async def _archive_untouched_chats() -> None:
    """The "archive chats untouched for N days" policy, applied while the server runs."""
    await services().archive_untouched_periodically()


@app.register_lifespan_task
async def _close_idle_chat_files() -> None:
    """Chat files nobody has used for a minute are closed, even while their person stays."""
    await services().close_idle_chat_files_periodically()


log_redaction.install()
# The bridge first: its socket hooks then run inside the connect check, so they see the
# token a socket is actually linked with (a refused one is swapped for a fresh token).
live_bridge = bridge.LiveBridge(
    app,
    bridge.LiveStates(
        directory=SharedDirectoryState,
        memory=SharedMemoryState,
        conversation=SharedConversationState,
        archive=SharedArchiveState,
        chat_settings=SharedChatSettingsState,
        projects=SharedProjectsState,
    ),
    services(),
)
live_bridge.install()
app.register_lifespan_task(live_bridge.text_frames.follow)
# Shared chats: the sharing change feed, presence, a removed member's tabs emptied at once.
live_sharing = sharing_live.SharingLive(
    app,
    live_bridge,
    sharing_live.SharingStates(
        tab=ChatTabState,
        shared_with_me=SharedWithMeState,
        people=SharedChatPeopleState,
        chat_views=CHAT_VIEWS,
    ),
    services(),
)
live_sharing.install()
app.register_lifespan_task(live_sharing.follow_feed)
temporary_keeper = TemporaryKeeper(services(), live_bridge.pumped_chats)


@app.register_lifespan_task
async def _keep_temporary_chats() -> None:
    """Temporary chats held while a tab shows them, removed once none has (the grace)."""
    await temporary_keeper.run()


token_binding.install(app)  # sockets too: a connect is checked like an event
