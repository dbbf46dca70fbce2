"""What the live layer costs per turn: SQLite statements and thread hops, before and after.

A turn is one sent message and its streamed reply (the offline model), with one tab watching
the chat: the bridge's run pump applies the run events to the real shared conversation state,
and re-reads the chat's header (``SharedChatSettingsState.refresh``) after ``run.started`` and
``run.completed``, through the real fan-out (``chatsapp.live.fanout``) into Reflex's in-memory
state manager. Statements are counted where every statement passes (``Database._run``), thread
hops at ``asyncio.to_thread`` (``offload`` and the runtime's own hops both go through it).

Three runs side by side in this process, each on a fresh chat:

* ``no tab``: nobody watches (the floor: what the runtime itself costs);
* ``as before``: the live layer as it was: after ``run.queued`` and every end of a run the
  conversation view re-read its whole window (``SharedConversationState.refresh``), and the
  header was read with four runtime calls (binding, conversation, meter, each opening the chat
  and hopping threads; the agent's name every time);
* ``now``: the view shows the messages ``run.queued`` and ``run.completed`` carry
  (``show_written``, no read), and the header is :meth:`backend.runtime.ChatRuntime.chat_header`
  (one hop), the agent's name read only when its version moved.

The live layer's own cost is a run's total minus the ``no tab`` floor; the ratio compares it.

    python bench/live_cost_bench.py [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
_DATA = tempfile.mkdtemp(prefix="live-cost-")
os.environ.update(
    {"CHATS_DATA_DIR": _DATA, "CHATS_OFFLINE_CHUNK_DELAY_S": "0", "CHATS_AUTH": "none"}
)

import chatsapp.chatsapp  # noqa: E402, F401  (registers every state of the app)
from backend.config import Settings  # noqa: E402
from backend.storage import database  # noqa: E402
from chatsapp import services as services_module  # noqa: E402
from chatsapp.live.bridge import LiveBridge, LiveStates  # noqa: E402
from chatsapp.live.fanout import shared_change  # noqa: E402
from chatsapp.services import Services, offload  # noqa: E402
from chatsapp.states.archive import SharedArchiveState  # noqa: E402
from chatsapp.states.directory import SharedDirectoryState  # noqa: E402
from chatsapp.states.memory import SharedMemoryState  # noqa: E402
from chatsapp.states.models import (  # noqa: E402
    SharedChatSettingsState,
    agent_name,
    header_values,
)
from chatsapp.states.shared_conversation import SharedConversationState  # noqa: E402
from tests.support.fake_reflex_app import FakeReflexApp, link  # noqa: E402

USER = "bench"


class Counts:
    """Statements and thread hops since :meth:`reset`."""

    def __init__(self) -> None:
        self.statements = 0
        self.hops = 0

    def install(self) -> None:
        run = database.Database._run
        to_thread = asyncio.to_thread

        def counted_run(db: Any, *args: Any, **kwargs: Any) -> Any:
            self.statements += 1
            return run(db, *args, **kwargs)

        async def counted_to_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            self.hops += 1
            return await to_thread(fn, *args, **kwargs)

        database.Database._run = counted_run  # type: ignore[method-assign]
        asyncio.to_thread = counted_to_thread  # type: ignore[assignment]

    def reset(self) -> None:
        self.statements = self.hops = 0


async def header_as_before(self: Any, user_id: str) -> None:
    """``SharedChatSettingsState.refresh`` as it was: four calls, the name read each time."""
    runtime = services_module.services().runtime(user_id)
    binding = await runtime.agent_binding(self.chat_id)
    record = await runtime.get_conversation(self.chat_id)
    meter = await runtime.context_meter(self.chat_id)
    label = await offload(agent_name, user_id, binding.agent_id)
    values = header_values(binding, record, meter, label)
    for name, value in values.items():
        if getattr(self, name) != value:
            setattr(self, name, value)


def read_instead(self: Any, written: Any, *, in_place: bool = False) -> bool:
    """``show_written`` as it was before it existed: never shown from the event (re-read)."""
    return False


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.002)


async def turns(
    served: Services, app: FakeReflexApp, counts: Counts, n: int, *, watched: bool
) -> tuple[float, float]:
    """Statements and hops per turn over ``n`` turns of a fresh chat."""
    chat_id = (await offload(served.directory(USER).create_chat)).id
    runtime = served.runtime(USER)
    await runtime.send_message(chat_id, "warm up")  # the chat file exists, the pump caught up
    await runtime.wait_idle(chat_id)
    token = f"conv-{chat_id}"
    if watched:
        await link(app, token, SharedConversationState, "tab-1")
        await link(app, token, SharedChatSettingsState, "tab-1")
        async with shared_change(app, token, SharedConversationState) as view:
            view.chat_id = chat_id  # the tab opened the chat
            await view.refresh(USER)
        async with shared_change(app, token, SharedChatSettingsState) as header:
            header.chat_id = chat_id  # the tab linked the header
            await header.refresh(USER)
        served.conversation_opened(USER, chat_id, "tab-1")
        await asyncio.sleep(0.2)  # the pump subscribed and replayed the log
    counts.reset()
    for turn in range(n):
        await runtime.send_message(chat_id, f"message {turn}")
        await runtime.wait_idle(chat_id)
        await asyncio.sleep(0.05)  # the pump's last header refresh
    return counts.statements / n, counts.hops / n


async def main(n: int) -> None:
    served = Services(Settings.from_env())
    services_module._services = served
    app = FakeReflexApp()
    live = LiveBridge(
        app,  # type: ignore[arg-type]
        LiveStates(
            directory=SharedDirectoryState,
            memory=SharedMemoryState,
            conversation=SharedConversationState,
            archive=SharedArchiveState,
            chat_settings=SharedChatSettingsState,
        ),
        served,
    )
    live.install()
    counts = Counts()
    counts.install()
    floor = await turns(served, app, counts, n, watched=False)
    header_refresh = SharedChatSettingsState.__dict__["refresh"]
    show_written = SharedConversationState.__dict__["show_written"]
    now = header_refresh.fn, show_written.fn
    header_refresh.fn, show_written.fn = header_as_before, read_instead
    before = await turns(served, app, counts, n, watched=True)
    header_refresh.fn, show_written.fn = now
    after = await turns(served, app, counts, n, watched=True)
    live.stop()
    await served.shutdown()

    print(f"per turn (a sent message and its streamed reply), {n} turns each")
    print(f"{'':24}{'statements':>12}{'thread hops':>13}")
    for name, (statements, hops) in (
        ("no tab (floor)", floor),
        ("as before", before),
        ("now", after),
    ):
        print(f"{name:24}{statements:>12.1f}{hops:>13.1f}")
    live_before = (before[0] - floor[0], before[1] - floor[1])
    live_after = (after[0] - floor[0], after[1] - floor[1])
    print(f"{'live layer before':24}{live_before[0]:>12.1f}{live_before[1]:>13.1f}")
    print(f"{'live layer now':24}{live_after[0]:>12.1f}{live_after[1]:>13.1f}")
    ratio = [a / b if b else float("nan") for a, b in zip(live_after, live_before, strict=True)]
    print(f"{'now / before':24}{ratio[0]:>12.2f}{ratio[1]:>13.2f}")


def run(main_fn: Callable[[int], Awaitable[None]]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=20)
    asyncio.run(main_fn(parser.parse_args().turns))


if __name__ == "__main__":
    run(main)
