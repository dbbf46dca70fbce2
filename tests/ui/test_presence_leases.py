"""Presence outlives no process: each app process's tabs of a chat count under its lease,
renewed by its heartbeat, and the counts of a process that stopped renewing (it crashed)
leave the header once its lease ends (issue 28 item 2, "who has the chat open now").

The rules on plain values, with the clock passed in; then the live layer of two processes
writing one chat's real people state (one state manager, as Redis is one store for every
worker), on a manual clock.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import reflex as rx

import chatsapp.chatsapp  # noqa: F401  (registers every state of the app)
from chatsapp.auth.identity import conversation_token
from chatsapp.live.sharing_live import SharingLive, SharingStates
from chatsapp.states.chat_people import (
    PRESENCE_LEASE_S,
    SharedChatPeopleState,
    renewed,
    tabs_per_person,
    with_tabs_of,
)
from tests.support.deadlines import ManualClock, until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = pytest.mark.anyio
CHAT = "c1"


def show(counts: Any, leases: Any, process: str, tabs: dict[str, int], now: float) -> Any:
    return renewed(with_tabs_of(counts, process, tabs), leases, process, now)


class TestTheRules:
    def test_processes_add_up_and_each_replaces_only_its_own_tabs(self) -> None:
        counts, leases = show({}, {}, "a", {"pat": 2}, 0.0)
        counts, leases = show(counts, leases, "b", {"pat": 1, "vic": 1}, 1.0)
        assert tabs_per_person(counts) == {"pat": 3, "vic": 1}
        counts, leases = show(counts, leases, "a", {}, 2.0)  # a's last tab left
        assert tabs_per_person(counts) == {"pat": 1, "vic": 1}
        assert set(leases) == {"b"}

    def test_a_process_that_stops_renewing_is_dropped_once_its_lease_ends(self) -> None:
        counts, leases = show({}, {}, "crashed", {"pat": 1}, 0.0)
        counts, leases = show(counts, leases, "alive", {"vic": 1}, 0.0)
        counts, leases = renewed(counts, leases, "alive", PRESENCE_LEASE_S - 1)
        assert tabs_per_person(counts) == {"pat": 1, "vic": 1}  # within its lease
        counts, leases = renewed(counts, leases, "alive", PRESENCE_LEASE_S)
        assert tabs_per_person(counts) == {"vic": 1}
        assert set(leases) == {"alive"}

    def test_on_one_process_a_restart_drops_what_the_dead_one_counted(self) -> None:
        """One process, restarted under a new name: its first write after the old lease
        ended leaves only its own tabs (the old ones were never counted down)."""
        counts, leases = show({}, {}, "before", {"pat": 2, "vic": 1}, 0.0)
        counts, _ = show(counts, leases, "after", {"vic": 1}, PRESENCE_LEASE_S + 1)
        assert tabs_per_person(counts) == {"vic": 1}


@dataclasses.dataclass
class FakeBridge:
    """What the live layer reads of the bridge: whose each tab is."""

    owners: dict[str, str]

    def tab_owner(self, client_token: str) -> str | None:
        return self.owners.get(client_token)


class NamedAccounts:
    def user(self, user_id: str) -> Any:
        return type("User", (), {"username": user_id.removeprefix("id-")})()


class FakeServices:
    def accounts(self) -> NamedAccounts:
        return NamedAccounts()


def process(app: FakeReflexApp, owners: dict[str, str], clock: ManualClock) -> SharingLive:
    live = SharingLive(
        app,  # type: ignore[arg-type]
        FakeBridge(owners),  # type: ignore[arg-type]
        SharingStates(
            tab=SharedChatPeopleState,
            shared_with_me=SharedChatPeopleState,
            people=SharedChatPeopleState,
            chat_views=(),
        ),
        FakeServices(),  # type: ignore[arg-type]
    )
    live.clock = clock
    live.heartbeat_s = 0.001
    return live


async def people(app: FakeReflexApp) -> Any:
    token = rx.BaseStateToken(ident=conversation_token(CHAT), cls=SharedChatPeopleState)
    root = await app.state_manager.get_state(token)
    return await root.get_state(SharedChatPeopleState)


async def present(app: FakeReflexApp) -> list[str]:
    return list((await people(app)).present)


class TestTwoProcessesOnOneStore:
    async def test_a_crashed_processs_tabs_leave_once_its_lease_ends(self) -> None:
        app, clock = FakeReflexApp(), ManualClock()
        here = process(app, {"tab-o": "id-olga"}, clock)
        crashed = process(app, {"tab-p": "id-pat"}, clock)
        here.watched("tab-o", ("id-olga", CHAT), +1)
        crashed.watched("tab-p", ("id-olga", CHAT), +1)
        await until(lambda: _present_is(app, ["olga", "pat"]))

        assert crashed._heartbeat is not None
        crashed._heartbeat.cancel()  # the process dies: it renews nothing more
        clock.advance(PRESENCE_LEASE_S - 1)
        await until(lambda: _renewed_at(app, here, clock()))  # a heartbeat since the advance
        assert await present(app) == ["olga", "pat"]  # within its lease: still shown

        clock.advance(1)
        await until(lambda: _present_is(app, ["olga"]))
        here.watched("tab-o", ("id-olga", CHAT), -1)
        await until(lambda: _present_is(app, []))
        assert here._heartbeat is not None
        await until(here._heartbeat.done)  # no tab here: no heartbeat


async def _present_is(app: FakeReflexApp, names: list[str]) -> bool:
    return await present(app) == names


async def _renewed_at(app: FakeReflexApp, live: SharingLive, now: float) -> bool:
    return (await people(app))._leases.get(live.process) == now + PRESENCE_LEASE_S
