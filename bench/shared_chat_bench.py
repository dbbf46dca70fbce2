"""The owner's per-message cost in a chat shared with 5 members, vs a private chat (issue 28).

Run: ``.venv/bin/python bench/shared_chat_bench.py`` (a few seconds). Prints one line (format
in bench/README.md).

``shared_message_cost``: one owner runtime wired to the real sharing store as the app wires it
(``Sharing.run_hooks``: participants and the owner-context switch read from the store), two
chats of 10 messages each: a private one, and one shared with 5 members (3 participants, 2
viewers). Measured: ``send_message`` → ``run.completed`` (store the message and placeholder,
claim, read the switch, assemble the prompt, stream, commit) plus a read of the conversation
record (what a header refresh reads: the membership), with an in-process model that answers
at once, so the time is the runtime's and the store's. Median of interleaved turns after one
untimed warm-up each. Baseline: the private chat's. Goal ≤ 1.3. (The shared chat's run
reads less than the private one's: no shared memory, no retrieval, fewer tool specs; the
sharing store's two reads per turn are what it adds.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.accounts import CONSOLE_ACTOR, Accounts  # noqa: E402
from backend.chats import Chats  # noqa: E402
from backend.config import Settings  # noqa: E402
from backend.runtime import ChatRuntime  # noqa: E402
from backend.sharing import ChatRef, Sharing  # noqa: E402
from tests.support.scripted_model import ScriptedModel  # noqa: E402

MEMBERS = (("p1", "participant"), ("p2", "participant"), ("p3", "participant"))
MEMBERS += (("v1", "viewer"), ("v2", "viewer"))
TIMED_TURNS = 30
HISTORY = 10
PASSWORD = "correct horse battery staple"


async def _turn_s(runtime: ChatRuntime, chat_id: str) -> float:
    after = (await runtime.run_status(chat_id)).last_seq
    started = time.perf_counter()
    ticket = await runtime.send_message(chat_id, "and what about the next step?")
    async for event in runtime.subscribe(chat_id, after_seq=after):
        if event.run_id == ticket.run_id and event.type in ("run.completed", "run.failed"):
            break
    await runtime.get_conversation(chat_id)
    elapsed = time.perf_counter() - started
    await runtime.wait_idle(chat_id)
    return elapsed


async def shared_message_cost(root: Path) -> str:
    base = Settings.from_env({"CHATS_PASSWORD_HASH_PROFILE": "cheapest"})
    settings = dataclasses.replace(base, data_dir=root / "data")
    settings.data_dir.mkdir(parents=True)
    with Accounts(settings) as accounts, Sharing(settings, accounts) as sharing:
        admin = accounts.create_user(CONSOLE_ACTOR, "admin", PASSWORD, role="admin")
        owner = accounts.create_user(admin.id, "olivia", PASSWORD)
        for name, _role in MEMBERS:
            accounts.create_user(admin.id, name, PASSWORD)
        chats = Chats(settings.data_dir, owner.id)
        hooks = sharing.run_hooks(owner.id)
        runtime = ChatRuntime(
            settings,
            chats,
            ScriptedModel(default="Sure, here it is.", offline=True),
            owner_name=owner.username,
            participants=hooks.participants,
            owner_context=hooks.owner_context,
        )
        private, shared = chats.create_chat("Private").id, chats.create_chat("Shared").id
        for name, role in MEMBERS:
            sharing.share(owner, ChatRef(owner_id=owner.id, chat_id=shared), name, role)
        for chat_id in (private, shared):
            for _ in range(HISTORY // 2):
                await _turn_s(runtime, chat_id)  # history, and warm-up
        timings: dict[str, list[float]] = {private: [], shared: []}
        for _ in range(TIMED_TURNS):  # interleaved: machine noise hits both alike
            for chat_id in (private, shared):
                timings[chat_id].append(await _turn_s(runtime, chat_id))
        record = await runtime.get_conversation(shared)
        assert len(record.participant_ids) == 1 + len(MEMBERS), record.participant_ids
        await runtime.aclose()
        chats.close()
    medians = {chat_id: statistics.median(times) for chat_id, times in timings.items()}
    ratio = medians[shared] / medians[private]
    return (
        f"shared_message_cost: ratio={ratio:.2f} goal=<=1.3 "
        f"(send -> run.completed + record read, median of {TIMED_TURNS}: "
        f"{medians[shared] * 1000:.2f} ms shared with {len(MEMBERS)} members vs "
        f"{medians[private] * 1000:.2f} ms private)"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(await shared_message_cost(Path(tmp)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
