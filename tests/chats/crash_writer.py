"""A child process that writes random chat changes until it is killed (crash tests).

Usage: ``python -m tests.chats.crash_writer <root> <seed> [sleep]``. Prints one line per
operation (flushed), so the parent can kill it at a chosen moment. With ``sleep`` it stops
after ``<seed>`` appends and waits to be killed (a writer that dies with hints pending).
"""

from __future__ import annotations

import random
import sys
import time

from backend.chats import Chats

VOCABULARY = [
    "apple",
    "banana",
    "cherry",
    "delta",
    "echo",
    "fox",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mango",
    "nectar",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "umbrella",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


def words(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(2, 7)))


def message(message_id: str, text: str) -> dict:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def random_writes(chats: Chats, rng: random.Random, steps: int, tag: str) -> None:
    """Apply ``steps`` random writes to random live chats (appends, edits, deletes, ...)."""
    chat_ids = [summary.id for summary in chats.list_chats(limit=1000)]
    for step in range(steps):
        chat = chats.get_chat(rng.choice(chat_ids))
        session = chat.session
        known = [m["id"] for m in session.get_history()]
        roll = rng.random()
        new_id = f"{tag}-{step}-{rng.randrange(10**9)}"
        if roll < 0.55 or not known:
            session.append_message(message(new_id, words(rng)))
        elif roll < 0.70:
            session.update_message(message(rng.choice(known), words(rng)))
        elif roll < 0.80:
            session.delete_messages([rng.choice(known)])
        elif roll < 0.88:
            session.import_message(message(new_id, words(rng)), parent_id=None, created_at=1)
        elif roll < 0.95:
            session.append_message(message(new_id, words(rng)), parent_id=rng.choice(known))
        elif roll < 0.97:
            session.clear_messages()
        else:
            with chat.sessions.database.transaction():
                for i in range(3):
                    session.append_message(message(f"{new_id}-{i}", words(rng)))
        print(step, flush=True)


def main() -> None:
    root, seed = sys.argv[1], int(sys.argv[2])
    chats = Chats(root, "alice")
    rng = random.Random(seed)
    if len(sys.argv) > 3:  # write a few, then hang with the hints still pending
        chat = chats.get_chat(chats.list_chats()[0].id)
        for i in range(seed):
            chat.session.append_message(message(f"pending-{i}", "pending words"))
        print("ready", flush=True)
        time.sleep(600)
        return
    random_writes(chats, rng, 10**9, f"c{seed}")


if __name__ == "__main__":
    main()
