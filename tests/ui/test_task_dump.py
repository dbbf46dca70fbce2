"""``kill -USR1`` on a server process writes what every task of its event loop waits on.

A hang inside the loop (a lock nobody releases) leaves every thread idle: these pin that the
dump names the coroutines a stuck task is in, through ``async with`` on a context manager
generator, down to the lock it waits for; and that the browser tests' harness gets it from a
running process (and signals no process that would die of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from chatsapp.hosting import task_dump
from tests.support.app_dumps import dump_tasks
from tests.support.deadlines import until, until_blocking
from tests.support.processes import catches, process_tree

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def holding(lock: asyncio.Lock) -> AsyncIterator[None]:
    async with lock:
        yield


async def wait_for_the_lock_inside_a_context(lock: asyncio.Lock) -> None:
    async with holding(lock):
        pass


class TestDescribeTasks:
    async def test_a_task_stuck_on_a_lock_is_named_down_to_the_lock(self) -> None:
        lock = asyncio.Lock()
        await lock.acquire()
        stuck = asyncio.create_task(wait_for_the_lock_inside_a_context(lock), name="stuck-one")
        await asyncio.sleep(0.01)
        try:
            text = task_dump.describe_tasks({stuck})
        finally:
            stuck.cancel()
        lines = text.splitlines()
        assert lines[0] == f"{task_dump.HEADING} {os.getpid()}: 1"
        assert lines[1] == "task stuck-one:"
        named = " ".join(lines[2:])
        order = ["wait_for_the_lock_inside_a_context", "holding", "acquire"]
        positions = [named.index(f"in {name}") for name in order]
        assert positions == sorted(positions)  # outermost first, the lock last

    async def test_the_deepest_chains_come_first_and_the_count_is_bounded(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        lock = asyncio.Lock()
        await lock.acquire()
        deep = asyncio.create_task(wait_for_the_lock_inside_a_context(lock), name="deep")
        shallow = asyncio.create_task(asyncio.sleep(30), name="shallow")
        await asyncio.sleep(0.01)
        monkeypatch.setattr(task_dump, "MAX_TASKS", 1)
        try:
            text = task_dump.describe_tasks({shallow, deep})
        finally:
            deep.cancel()
            shallow.cancel()
        assert "task deep:" in text and "task shallow:" not in text
        assert text.endswith("… and 1 more")


class TestSignal:
    async def test_the_signal_writes_the_dump_to_the_log(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        task_dump.install()
        try:
            with caplog.at_level(logging.WARNING, logger=task_dump.__name__):
                os.kill(os.getpid(), task_dump.DUMP_SIGNAL)
                await until(lambda: task_dump.HEADING in caplog.text, what="the dump")
        finally:
            asyncio.get_running_loop().remove_signal_handler(task_dump.DUMP_SIGNAL)
        assert f"{task_dump.HEADING} {os.getpid()}" in caplog.text
        assert "test_the_signal_writes_the_dump_to_the_log" in caplog.text


LISTENING = textwrap.dedent(
    """
    import asyncio, sys
    from chatsapp.hosting import task_dump

    async def main():
        task_dump.install()
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


def test_the_harness_gets_the_dump_of_a_listening_process_and_spares_the_others(
    tmp_path: Path,
) -> None:
    log_path = tmp_path / "app.log"
    with log_path.open("wb") as log:
        listening = subprocess.Popen(
            [sys.executable, "-c", LISTENING], stdout=log, stderr=subprocess.STDOUT
        )
        deaf = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        until_blocking(
            lambda: "ready" in log_path.read_text(), what="the listening process started"
        )
        assert catches(listening.pid, signal.SIGUSR1)
        assert not catches(deaf.pid, signal.SIGUSR1)
        assert process_tree(os.getpid())[0] == os.getpid()
        assert listening.pid in process_tree(os.getpid())
        text = dump_tasks(SimpleNamespace(process=listening, log_path=log_path))  # type: ignore[arg-type]
        assert text.startswith(f"{task_dump.HEADING} {listening.pid}")
        assert "in main" in text
        spared = dump_tasks(SimpleNamespace(process=deaf, log_path=log_path))  # type: ignore[arg-type]
        assert spared == "no process of the app listens for the task dump signal"
        assert deaf.poll() is None and listening.poll() is None
    finally:
        listening.kill()
        deaf.kill()
        listening.wait()
        deaf.wait()
