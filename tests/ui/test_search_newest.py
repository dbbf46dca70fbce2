"""Search as you type: one search in flight per tab, and the shown results are the newest query's.

``FakeTab`` plays the part of ``SearchTabState``: keystrokes record the query and start a loop
only when none runs; the loop reads and shows under the tab's lock. The backend search is held
on a gate, so the tests decide exactly which keystrokes land while it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from chatsapp.states.newest import SEARCH_STALE_S, search_is_running, search_newest


class FakeTab:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.query = ""
        self.shown: list[str] = []
        self.shown_for: list[str] = []  # every query whose results reached the screen
        self.searched: list[str] = []
        self.running = False
        self.loops: list[asyncio.Task[int]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    def type(self, text: str) -> None:
        """One keystroke handler: record the query; start a search only if none is running."""
        self.query = text
        if not self.running:
            self.running = True
            self.loops.append(
                asyncio.ensure_future(search_newest(self.take, self.search, self.show))
            )

    async def take(self, searched: str | None) -> str | None:
        async with self.lock:
            if self.query == searched or not self.query.strip():
                self.running = False
                return None
            return self.query

    async def search(self, query: str) -> list[str]:
        self.searched.append(query)
        await self.gate.wait()
        return [f"hit for {query}"]

    async def show(self, query: str, rows: list[str]) -> None:
        async with self.lock:
            if query == self.query:
                self.shown = rows
                self.shown_for.append(query)

    async def settle(self) -> int:
        return sum(await asyncio.gather(*self.loops))


async def _until(condition: Callable[[], object], what: str) -> None:
    """Let the loop run until ``condition()`` holds (a bounded number of turns)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


class TestTypingQuickly:
    def test_thirty_keystrokes_during_a_search_run_two_searches_and_show_the_last_query(self):
        async def scenario() -> tuple[FakeTab, int]:
            tab = FakeTab()
            tab.gate.clear()
            text = "where did we plan the zebra trip"[:30]
            tab.type(text[0])
            await _until(lambda: tab.searched, "the first search started")
            for i in range(2, len(text) + 1):
                tab.type(text[:i])
            tab.gate.set()
            return tab, await tab.settle()

        tab, runs = asyncio.run(scenario())
        assert runs == 2
        assert tab.searched == ["w", "where did we plan the zebra tr"]
        assert tab.shown == ["hit for where did we plan the zebra tr"]

    def test_keystrokes_while_a_search_runs_never_start_a_second_one(self):
        async def scenario() -> FakeTab:
            tab = FakeTab()
            tab.gate.clear()
            tab.type("a")
            await _until(lambda: tab.searched, "the first search started")
            tab.type("ab")
            tab.type("abc")
            assert len(tab.loops) == 1
            tab.gate.set()
            await tab.settle()
            return tab

        assert asyncio.run(scenario()).searched == ["a", "abc"]


class TestNewestWins:
    def test_an_older_result_is_never_shown_over_a_newer_query(self):
        async def scenario() -> FakeTab:
            tab = FakeTab()
            tab.gate.clear()
            tab.type("zeb")
            await _until(lambda: tab.searched, "the first search started")
            tab.type("zebra")  # lands while "zeb" is being searched
            tab.gate.set()
            await tab.settle()
            return tab

        tab = asyncio.run(scenario())
        assert tab.shown_for == ["zebra"]
        assert tab.shown == ["hit for zebra"]

    def test_clearing_the_box_mid_search_shows_nothing_and_ends_the_loop(self):
        async def scenario() -> tuple[FakeTab, int]:
            tab = FakeTab()
            tab.gate.clear()
            tab.type("zeb")
            await _until(lambda: tab.searched, "the first search started")
            tab.type("")
            tab.gate.set()
            return tab, await tab.settle()

        tab, runs = asyncio.run(scenario())
        assert (runs, tab.shown, tab.running) == (1, [], False)

    def test_a_keystroke_after_the_loop_ended_starts_a_new_search(self):
        async def scenario() -> FakeTab:
            tab = FakeTab()
            tab.type("zeb")
            await tab.settle()
            tab.type("zebra")
            await tab.settle()
            return tab

        tab = asyncio.run(scenario())
        assert tab.searched == ["zeb", "zebra"]
        assert tab.shown == ["hit for zebra"]


class TestRunningFlag:
    def test_a_loop_that_has_run_longer_than_the_stale_bound_no_longer_blocks_searches(self):
        assert search_is_running(started_at=100.0, now=100.0 + SEARCH_STALE_S - 1)
        assert not search_is_running(started_at=100.0, now=100.0 + SEARCH_STALE_S)
        assert not search_is_running(started_at=0.0, now=5.0)
