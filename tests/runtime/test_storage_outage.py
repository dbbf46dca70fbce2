"""PostgreSQL going away mid-use: a write fails with "storage unavailable" (never naming the
server), nothing acknowledged is lost, and the runtime works again by itself once it returns.

The app reaches the test server through a relay (``tests/storage/cutting_proxy.py``) that cuts
every connection and refuses new ones for :data:`OUTAGE_S`, as a server restart does, while a
reply streams. A statement waits up to the pool's ``POOL_WAIT_S`` for a connection (5 s: an
outage shorter than that costs a write a wait, not a failure); here it waits
:data:`POOL_WAIT_S`, so the outage outlasts it and writes fail as a longer one makes them.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from backend.chats import Chats
from backend.runtime.failures import (
    STORAGE_UNAVAILABLE_ERROR,
    STORAGE_UNAVAILABLE_REFUSAL,
    describe_failure,
    describe_refusal,
)
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.records import RunStatus
from backend.storage.postgres import StorageUnavailableError
from backend.storage.postgres import engine as engine_module
from tests.runtime.helpers import events_until_done, make_runtime, texts
from tests.storage.cutting_proxy import CuttingProxy
from tests.support.deadlines import WAIT_S
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio

OUTAGE_S = 5.0
"""How long the server stays away (the issue's "stop it for 5 s")."""
POOL_WAIT_S = 1.0


async def sent_once_back(runtime, chat_id: str, text: str):
    """``send_message`` retried until storage answers again (the pool reconnects by itself,
    backing off between attempts): the first ticket it gives."""
    for _ in range(int(WAIT_S / POOL_WAIT_S)):
        try:
            return await runtime.send_message(chat_id, text)
        except StorageUnavailableError:
            continue  # each try waited POOL_WAIT_S for a connection
    raise AssertionError(f"storage did not come back within {WAIT_S} s")


@pytest.fixture
def relay(postgres_url, monkeypatch):
    monkeypatch.setattr(engine_module, "POOL_WAIT_S", POOL_WAIT_S)
    proxy = CuttingProxy(postgres_url)
    monkeypatch.setenv("CHATS_STORAGE", proxy.url)
    yield proxy
    proxy.close()


async def test_a_reply_streaming_while_storage_goes_away_fails_and_the_chat_recovers(
    tmp_path, relay, closing
) -> None:
    hold = Hold()
    model = ScriptedModel(["The first ", "half", hold, " and the rest."], default="Back again.")
    chats = Chats(tmp_path / "data", "user1")
    try:
        runtime = closing(make_runtime(tmp_path, chats, model, checkpoint_interval_s=0.0))
        chat_id = chats.create_chat("outage").id
        first = await runtime.send_message(chat_id, "before the outage")  # acknowledged
        watching = asyncio.ensure_future(events_until_done(runtime, chat_id, first.run_id))
        await hold.reached()
        relay.go_down()
        down_at = time.monotonic()
        hold.release()  # the next checkpoint finds no server
        ended = (await watching)[-1]
        assert ended.type in ("run.failed", "run.completed")
        if ended.type == "run.failed":
            assert ended.payload.error == STORAGE_UNAVAILABLE_ERROR  # what the tab shows

        with pytest.raises(StorageUnavailableError) as refused:
            await runtime.send_message(chat_id, "during the outage")
        shown = (describe_refusal(refused.value), describe_failure(refused.value))
        assert shown == (STORAGE_UNAVAILABLE_REFUSAL, STORAGE_UNAVAILABLE_ERROR)
        assert "127.0.0.1" not in " ".join(shown)  # a person is never told where it is

        await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))
        relay.come_back()
        after = await sent_once_back(runtime, chat_id, "after the outage")
        done = (await events_until_done(runtime, chat_id, after.run_id))[-1]
        assert done.type == "run.completed"

        chat = chats.get_chat(chat_id)
        history = texts(chat.session)
        assert ("user", "before the outage") in history  # acknowledged: kept
        assert ("user", "during the outage") not in history  # refused: not half-written
        assert history[-2:] == [("user", "after the outage"), ("assistant", "Back again.")]
        store = runtime_store_for(chat.database)
        assert store.load_run(after.run_id).status == RunStatus.COMPLETED
        assert store.count_runs(chat_id, RunStatus.RUNNING) == 0
    finally:
        chats.close()
