"""Each function of ``chatsapp.reflex_seam`` holds against the installed Reflex.

One contract per function, run through Reflex's own code (its event processor, state manager,
socket namespace, command line), never through a copy of what we expect of it: a Reflex that
renames its event logger, stops recording "previous dirty vars" in ``_clean`` or looks its
backend starter up elsewhere fails here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import reflex as rx
from reflex.app import EventNamespace
from reflex.istate.manager.memory import StateManagerMemory
from reflex.utils import exec as reflex_exec
from reflex.utils.token_manager import RedisTokenManager, SocketRecord
from reflex_base.event.processor.base_state_processor import BaseStateEventProcessor
from reflex_base.event.processor.event_processor import EventProcessor

from chatsapp import reflex_seam as seam
from chatsapp.chatsapp import app as chats_app
from chatsapp.hosting import log_redaction
from chatsapp.states.shared_conversation import SharedConversationState
from tests.support.deadlines import until

pytestmark = pytest.mark.anyio

SEEN: dict[str, Any] = {}


class SharedSeamProbeState(rx.SharedState):
    """A shared state whose events call the seam from inside Reflex's own event processing."""

    count: int = 0

    @rx.event
    async def join(self, token: str) -> None:
        linked = await seam.link_to(self, token)
        SEEN["linked"] = linked
        SEEN["tabs"] = seam.linked_tabs(linked)

    @rx.event
    async def token_of(self) -> None:
        SEEN["token"] = seam.linked_token(self)

    @rx.event
    async def look(self) -> None:
        root: rx.State = self
        while root.parent_state is not None:
            root = root.parent_state
        SEEN["links"] = list(seam.linked_states_of(root))  # as a middleware sees the tab

    @rx.event
    async def join_quietly(self, token: str) -> None:
        linked = await seam.link_to(self, token)
        SEEN["quiet"] = quiet = set()
        seam.quiet_fanned_out_changes(linked, _Ignoring(quiet))


class _Ignoring(set):
    """Records that ``update`` was called (``_clean`` writes through it), keeps nothing."""

    def __init__(self, log: set[str]) -> None:
        super().__init__()
        self.log = log

    def update(self, *others: Any) -> None:
        self.log.add("update")


class SharedSeamSecondProbeState(rx.SharedState):
    """A second shared state, so one tab can be linked to two shared tokens."""

    count: int = 0

    @rx.event
    async def join(self, token: str) -> None:
        await seam.link_to(self, token)


PROBE = SharedSeamProbeState.get_full_name()
SECOND = SharedSeamSecondProbeState.get_full_name()


@pytest.fixture
async def processor() -> AsyncIterator[BaseStateEventProcessor]:
    """Reflex's own processor of state events, on the app's in-memory state manager."""
    chats_app.state_manager  # noqa: B018  (created on first use)
    SEEN.clear()
    async with BaseStateEventProcessor().configure(state_manager=chats_app.state_manager) as p:
        yield p


async def run(
    processor: BaseStateEventProcessor,
    tab: str,
    handler: str,
    state: str = PROBE,
    **payload: Any,
) -> None:
    await (await enqueue(processor, tab, handler, state, **payload))


async def enqueue(
    processor: BaseStateEventProcessor,
    tab: str,
    handler: str,
    state: str = PROBE,
    **payload: Any,
) -> Any:
    """The event's future: awaiting it waits for the handler, cancelling it cancels it."""
    event = rx.event.Event(
        name=f"{state}.{handler}", payload=payload, router_data={"token": tab, "headers": {}}
    )
    return await processor.enqueue(tab, event)


def shared_lock(token: str, cls: type[rx.State]) -> asyncio.Lock | None:
    """The in-memory state manager's lock of a shared token (None until first taken)."""
    manager = chats_app.state_manager
    assert isinstance(manager, StateManagerMemory)
    return manager._states_locks.get(rx.BaseStateToken(ident=token, cls=cls).lock_key)


def new_tab() -> str:
    return str(uuid.uuid4())


# ── logging ─────────────────────────────────────────────────────────


class TestEventLogger:
    async def test_reflex_logs_an_unroutable_event_with_its_cookie_to_the_seams_logger(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        log_redaction.install()
        event = rx.event.Event(
            name="no_such.handler",
            router_data={"headers": {"cookie": "chats_session=SECRET-4482"}},
        )
        with caplog.at_level(logging.DEBUG):
            async with EventProcessor().configure(state_manager=StateManagerMemory()) as p:
                await p.enqueue(new_tab(), event)
                await asyncio.sleep(0.05)
                await p.join()
        about = [r for r in caplog.records if "no_such.handler" in r.getMessage()]
        assert about, "Reflex no longer logs an unroutable event"
        assert {r.name for r in about} == {seam.event_logger().name}
        assert "SECRET-4482" not in caplog.text


# ── the state tree ──────────────────────────────────────────────────


class TestLinking:
    async def test_link_to_links_the_tab_and_linked_tabs_names_it(self, processor) -> None:
        tab = new_tab()
        await run(processor, tab, "join", token="probe-a")
        assert isinstance(SEEN["linked"], SharedSeamProbeState)
        assert tab in SEEN["tabs"]

    async def test_linked_token_names_the_token_a_tabs_state_is_linked_to(self, processor) -> None:
        tab = new_tab()
        await run(processor, tab, "token_of")
        assert SEEN["token"] == ""
        await run(processor, tab, "join", token="probe-h")
        await run(processor, tab, "token_of")
        assert SEEN["token"] == "probe-h"

    async def test_linked_states_of_a_tab_are_the_states_it_linked(self, processor) -> None:
        tab = new_tab()
        await run(processor, tab, "join", token="probe-b")
        await run(processor, tab, "look")
        assert [type(s) for s in SEEN["links"]] == [SharedSeamProbeState]

    async def test_quiet_fanned_out_changes_receives_what_clean_records(self, processor) -> None:
        await run(processor, new_tab(), "join_quietly", token="probe-c")
        assert SEEN["quiet"] == {"update"}


class TestCancelledLinkEntry:
    """An event of a tab linked to two shared tokens, cancelled while it waits for the
    second's lock (a navigation supersedes a page's unfinished on_load events; a closed tab
    cancels them), must release the first. Reflex 0.10.1 leaves it locked for good: every
    later tab linking that token (all of a person's tabs) hangs."""

    async def test_the_first_shared_token_is_free_again_after_the_cancel(self, processor) -> None:
        seam.release_link_locks_of_a_cancelled_event()
        tab = new_tab()
        await run(processor, tab, "join", token="probe-first")
        await run(processor, tab, "join", SECOND, token="probe-second")
        held, release = asyncio.Event(), asyncio.Event()

        async def hold_the_second() -> None:
            async with seam.modify_shared(chats_app, "probe-second", SharedSeamSecondProbeState):
                held.set()
                await release.wait()

        holder = asyncio.create_task(hold_the_second())
        await held.wait()
        waiting = await enqueue(processor, tab, "look")

        def first_locked() -> bool:
            first = shared_lock("probe-first", SharedSeamProbeState)
            return first is not None and first.locked()

        # Until the event holds the first token and waits for the second.
        await until(first_locked, what="the event holding the first token")
        waiting.cancel()
        await asyncio.sleep(0.05)
        release.set()
        await holder
        async with asyncio.timeout(10):  # a leaked lock never frees: this would hang
            async with seam.modify_shared(chats_app, "probe-first", SharedSeamProbeState):
                pass
            await run(processor, tab, "look")  # and the tab goes on
        assert [type(s) for s in SEEN["links"]] == [
            SharedSeamProbeState,
            SharedSeamSecondProbeState,
        ]


class TestSharedTokenChanges:
    async def test_modify_shared_locks_the_token_and_keeps_the_change(self, processor) -> None:
        await run(processor, new_tab(), "join", token="probe-d")
        async with seam.modify_shared(chats_app, "probe-d", SharedSeamProbeState) as root:
            (await root.get_state(SharedSeamProbeState)).count = 7
            await seam.resolved_delta(root)
        async with seam.modify_shared(chats_app, "probe-d", SharedSeamProbeState) as root:
            assert (await root.get_state(SharedSeamProbeState)).count == 7

    async def test_resolved_delta_names_the_change_and_clean_records_it_to_fan_out(
        self, processor
    ) -> None:
        tab = new_tab()
        await run(processor, tab, "join", token="probe-e")
        async with seam.modify_shared(chats_app, "probe-e", SharedSeamProbeState) as root:
            probe = await root.get_state(SharedSeamProbeState)
            probe.count = 3
            delta = await seam.resolved_delta(root)
            assert delta[PROBE]["count_rx_state_"] == 3
            assert not probe.dirty_vars
            assert probe._previous_dirty_vars == {"count"}  # what Reflex fans out next
            seam.forget_fanned_out_changes(probe)
            assert probe._previous_dirty_vars == set()

    async def test_shared_states_of_a_shared_tokens_tree_and_their_linked_tabs(
        self, processor
    ) -> None:
        tab = new_tab()
        await run(processor, tab, "join", token="probe-f")
        async with seam.modify_shared(chats_app, "probe-f", SharedSeamProbeState) as root:
            await root.get_state(SharedSeamProbeState)
            shared = {type(s): s for s in seam.shared_states_of(root)}
            assert seam.linked_tabs(shared[SharedSeamProbeState]) == {tab}

    async def test_existing_tab_state_reads_a_tab_that_exists_and_creates_none(
        self, processor
    ) -> None:
        tab = new_tab()
        assert await seam.existing_tab_state(chats_app, tab, SharedSeamProbeState) is None
        await run(processor, tab, "join", token="probe-g")
        state = await seam.existing_tab_state(chats_app, tab, SharedSeamProbeState)
        assert isinstance(state, SharedSeamProbeState)


class TestRouterAndEvents:
    async def test_rebuild_router_vars_rebuilds_the_router_from_router_data(self) -> None:
        state = rx.State(_reflex_internal_init=True)
        seam.rebuild_router_vars(
            state, {"pathname": "/chat/abc", "asPath": "/chat/abc", "token": "t-1"}
        )
        assert state.router.url.path == "/chat/abc"
        assert state.router.session.client_token == "t-1"

    async def test_events_update_carries_the_event_to_the_tab(self) -> None:
        update = seam.events_update(rx.redirect("/sign-in"))
        (event,) = update.events
        assert (event.name, event.payload["path"]) == ("_redirect", "/sign-in")


# ── fan-out ─────────────────────────────────────────────────────────


class TestFanOut:
    async def test_send_update_finds_a_tabs_socket_in_reflexs_token_manager(self) -> None:
        namespace = EventNamespace("/_event", chats_app)
        manager = namespace._token_manager
        sent: list[tuple[str, Any, Any]] = []

        async def emit(event: str, data: Any, to: Any = None) -> None:
            sent.append((event, data, to))

        namespace.emit = emit  # type: ignore[method-assign]
        tab = new_tab()
        await manager.link_token_to_sid(tab, "sid-1")

        class App:
            event_namespace = namespace

        await seam.send_update(App(), rx.state.StateUpdate(delta={"x": {"y": 1}}), {tab, "gone"})  # type: ignore[arg-type]
        assert [(event, to) for event, _data, to in sent] == [("event", ["sid-1"])]
        # Tabs served by another worker are relayed through these (Redis only).
        assert inspect.iscoroutinefunction(RedisTokenManager.emit_lost_and_found)

    async def test_send_here_sends_only_to_the_tabs_whose_socket_this_worker_serves(
        self,
    ) -> None:
        namespace = EventNamespace("/_event", chats_app)
        manager = namespace._token_manager
        sent: list[Any] = []

        async def emit(event: str, data: Any, to: Any = None) -> None:
            sent.append(to)

        namespace.emit = emit  # type: ignore[method-assign]
        here, elsewhere = new_tab(), new_tab()
        await manager.link_token_to_sid(here, "sid-1")
        manager.token_to_socket[elsewhere] = SocketRecord(instance_id="another", sid="sid-2")

        class App:
            event_namespace = namespace

        update = rx.state.StateUpdate(delta={"x": {"y": 1}})
        await seam.send_here(App(), update, {here, elsewhere, "gone"})  # type: ignore[arg-type]
        assert sent == [["sid-1"]]

    async def test_vars_update_is_the_delta_reflex_builds_for_those_vars(self) -> None:
        root = rx.State(_reflex_internal_init=True)
        view = await root.get_state(SharedConversationState)
        view.streaming_piece_0 = "Hello"
        built = (await root._get_resolved_delta())[SharedConversationState.get_full_name()]
        update = seam.vars_update(SharedConversationState, {"streaming_piece_0": "Hello"})
        ((name, fields),) = update.delta.items()
        assert name == SharedConversationState.get_full_name()
        assert fields.items() <= built.items()

    def test_reflex_fans_a_tabs_shared_change_out_through_app_modify_state(self) -> None:
        source = inspect.getsource(__import__("reflex.istate.shared", fromlist=["x"]))
        assert "app.modify_state(" in source and "previous_dirty_vars=" in source
        assert "previous_dirty_vars" in inspect.signature(rx.App.modify_state).parameters

    async def test_skip_router_vars_in_fan_out_unmarks_them_and_skips_empty_changes(self) -> None:
        opened: list[Any] = []

        class Root:
            dirty_vars = set(seam.ROUTER_FIELDS) | {"count"}

        class App:
            @staticmethod
            def modify_state(token: Any, **kwargs: Any) -> Any:
                import contextlib

                @contextlib.asynccontextmanager
                async def cm() -> AsyncIterator[Root]:
                    opened.append(token)
                    yield root

                return cm()

        root = Root()
        app = App()
        seam.skip_router_vars_in_fan_out(app)  # type: ignore[arg-type]
        async with app.modify_state("t", previous_dirty_vars={"s": set()}) as nothing:
            assert nothing is None
        async with app.modify_state("t", previous_dirty_vars={"s": {"count"}}):
            pass
        assert opened == ["t"] and root.dirty_vars == {"count"}

    def test_the_router_fields_are_what_reflex_marks_dirty_when_it_patches_a_shared_state(
        self,
    ) -> None:
        from reflex.istate import shared

        source = inspect.getsource(shared._patch_state)
        assert "dirty_vars.update(ROUTER_VARS)" in source
        assert "dirty_vars.add(ROUTER_DATA)" in source
        assert {*shared.ROUTER_VARS, shared.ROUTER_DATA} == seam.ROUTER_FIELDS


# ── sockets ─────────────────────────────────────────────────────────


@pytest.fixture
def namespace() -> EventNamespace:
    return EventNamespace("/_event", chats_app)


class _Served:
    def __init__(self, namespace: EventNamespace) -> None:
        self.event_namespace = namespace


class TestSocketHooks:
    async def test_hear_connects_runs_first_and_reflex_connects_with_what_it_returns(
        self, namespace, monkeypatch
    ) -> None:
        reached: list[dict[str, Any]] = []

        async def reflex_connect(sid: str, environ: dict[str, Any], auth: Any = None) -> None:
            reached.append(environ)

        monkeypatch.setattr(namespace, "on_connect", reflex_connect)

        async def swap(sid: str, environ: dict[str, Any]) -> dict[str, Any]:
            return {**environ, "QUERY_STRING": "token=fresh"}

        seam.hear_connects(_Served(namespace), swap)  # type: ignore[arg-type]
        # python-socketio looks the handler up by name on each connect, as here.
        await namespace.trigger_event("connect", "sid-1", {"QUERY_STRING": "token=old"}, None)
        assert reached == [{"QUERY_STRING": "token=fresh"}]
        assert list(inspect.signature(EventNamespace.on_connect).parameters)[:4] == [
            "self",
            "sid",
            "environ",
            "auth",
        ]

    async def test_hear_disconnects_names_the_token_of_the_closed_socket(self, namespace) -> None:
        tab = new_tab()
        await namespace._token_manager.link_token_to_sid(tab, "sid-9")
        namespace.sid_to_token["sid-9"] = tab
        closed: list[str] = []
        seam.hear_disconnects(_Served(namespace), closed.append)  # type: ignore[arg-type]
        result = namespace.on_disconnect("sid-9")
        if inspect.isawaitable(result):
            await result
        await asyncio.sleep(0)
        assert closed == [tab]

    async def test_emit_to_socket_emits_one_event_to_one_socket(self, namespace) -> None:
        sent: list[tuple[Any, ...]] = []

        async def emit(event: str, data: Any = None, to: Any = None, **_: Any) -> None:
            sent.append((event, data, to))

        namespace.emit = emit  # type: ignore[method-assign]
        await seam.emit_to_socket(_Served(namespace), "new_token", "t-3", "sid-3")  # type: ignore[arg-type]
        assert sent == [("new_token", "t-3", "sid-3")]
        assert "to" in inspect.signature(EventNamespace.emit).parameters

    def test_handshake_of_is_the_headers_and_peer_address_events_will_carry(
        self, namespace
    ) -> None:
        environ = {
            "asgi.scope": {
                "headers": [(b"cookie", b"chats_session=abc")],
                "client": ("203.0.113.9", 5555),
            }
        }
        headers, client_ip = seam.handshake_of(_Served(namespace), "sid-4", environ)  # type: ignore[arg-type]
        assert headers["cookie"] == "chats_session=abc"
        assert client_ip == "203.0.113.9"


# ── hosting ─────────────────────────────────────────────────────────


class TestHosting:
    def test_production_app_factory_names_the_apps_module(self) -> None:
        assert seam.production_app_factory() == "chatsapp.chatsapp:app"

    def test_serve_frontend_from_backend_sets_reflexs_build_flag(self) -> None:
        from reflex_base.environment import environment

        flag = environment.REFLEX_MOUNT_FRONTEND_COMPILED_APP
        before = flag.get()
        try:
            seam.serve_frontend_from_backend(True)
            assert flag.get() is True
            seam.serve_frontend_from_backend(False)
            assert flag.get() is False
        finally:
            flag.set(before)

    def test_built_pages_environment_is_what_reflexs_compile_check_reads(self, monkeypatch) -> None:
        from reflex.app import App

        app = App.__new__(App)  # _should_compile reads the environment and the web folder
        for name, value in seam.built_pages_environment().items():
            monkeypatch.setenv(name, value)
        assert app._should_compile() is False

    def test_install_backend_starter_replaces_what_reflexs_run_looks_up(self, monkeypatch) -> None:
        # tests/ui/test_server.py runs Reflex's production run with it; here, that the run
        # looks the starter up by name when it calls it (not bound at import).
        monkeypatch.setattr(reflex_exec, "run_backend_prod", reflex_exec.run_backend_prod)
        started: list[Any] = []
        seam.install_backend_starter(lambda *a, **k: started.append(a))
        reflex_exec.run_backend_prod("h", 1)
        assert started == [("h", 1)]
        from reflex import reflex as reflex_cli

        assert "exec.run_backend_prod(" in inspect.getsource(reflex_cli._run_prod)

    def test_run_reflex_cli_has_the_run_command_and_the_options_scripts_run_passes(self) -> None:
        from reflex.reflex import cli

        run = cli.commands["run"]
        options = {opt for param in run.params for opt in param.opts}
        assert {"--env", "--frontend-port", "--backend-port"} <= options
        with pytest.raises(SystemExit) as stop:
            seam.run_reflex_cli(["run", "--help"], prog_name="chats-server")
        assert stop.value.code == 0


# ── components ──────────────────────────────────────────────────────


class TestComponents:
    def test_var_data_of_a_state_var_names_its_state(self) -> None:
        data = seam.var_data_of(SharedSeamProbeState.count)
        assert data is not None and data.state == PROBE


def test_every_function_of_the_seam_has_a_contract_here() -> None:
    source = Path(__file__).read_text()
    functions = [
        name
        for name in seam.__all__
        if inspect.isfunction(getattr(seam, name))
        and getattr(seam, name).__module__ == seam.__name__
    ]
    assert functions
    assert [name for name in functions if f"seam.{name}(" not in source] == []


# ── uploads ─────────────────────────────────────────────────────────


class TestUploads:
    def test_upload_path_is_where_reflex_adds_its_upload_route(self) -> None:
        from reflex.app import App

        adds_route = inspect.getsource(App._add_optional_endpoints)
        assert "prepend_backend_path(str(constants.Endpoint.UPLOAD))" in adds_route
        assert seam.upload_path() == "/_upload"

    def test_the_upload_headers_are_the_ones_reflexs_upload_route_reads(self) -> None:
        from reflex_components_core.core import _upload

        reads = inspect.getsource(_upload)
        assert f'request.headers.get("{seam.UPLOAD_TOKEN_HEADER}")' in reads
        assert f'request.headers.get("{seam.UPLOAD_HANDLER_HEADER}")' in reads


class TestConnectionOverlay:
    @staticmethod
    def reflex_wraps() -> dict[Any, Any]:
        (wraps_field,) = [f for f in dataclasses.fields(rx.App) if f.name == "app_wraps"]
        return wraps_field.default_factory()  # type: ignore[misc,no-any-return]

    def test_reflex_keeps_its_connection_overlay_in_the_wrap_the_seam_replaces(self) -> None:
        defaults = self.reflex_wraps()
        assert "DefaultOverlayComponents" in str(defaults[seam.OVERLAY_WRAP](True))
        assert defaults[seam.OVERLAY_WRAP](False) is None  # a page without state has none

    def test_the_replacement_shows_the_overlay_and_the_page_it_wraps(self) -> None:
        class App:
            app_wraps = self.reflex_wraps()

        app = App()
        seam.replace_connection_overlay(app, lambda: rx.text("notice"))  # type: ignore[arg-type]
        wrap = app.app_wraps[seam.OVERLAY_WRAP](True)
        wrap.children.append(rx.text("the page"))  # a wrap's children: the page it wraps
        assert "notice" in str(wrap) and "the page" in str(wrap)
        assert "DefaultOverlayComponents" not in str(wrap)
        assert app.app_wraps[seam.OVERLAY_WRAP](False) is None

    def test_the_app_shows_its_own_notice_there(self) -> None:
        from chatsapp.components.connection_notice import connection_notice

        wrap = chats_app.app_wraps[seam.OVERLAY_WRAP](True)
        assert [str(child) for child in wrap.children] == [str(connection_notice())]
