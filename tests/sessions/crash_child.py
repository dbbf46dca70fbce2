"""Child process of the crash test: appends deterministic messages until it is killed.

Run as ``python -m tests.sessions.crash_child <db path> <run>``. After each append returns it
prints the message id, so the parent knows which appends were acknowledged. ``expected`` lets
the parent rebuild every message from its id alone.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from typing import Any

from backend.sessions import Sessions

CHUNKED_EVERY = 7
IMAGE_EVERY = 5


def expected(message_id: str) -> dict[str, Any]:
    """The message the child writes under ``message_id`` ("c<run>-<n>")."""
    n = int(message_id.rsplit("-", 1)[1])
    if n % CHUNKED_EVERY == 3:
        text = f"{message_id} ✓ " * 180_000  # ~2.3 MB: a row and a continuation row
    else:
        text = f"{message_id} " * (n % 13 + 1)
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if n % IMAGE_EVERY == 2:
        payload = hashlib.sha256(message_id.encode()).digest() * 4_000
        url = "data:image/png;base64," + base64.b64encode(payload).decode()
        parts.append({"type": "file", "mediaType": "image/png", "url": url})
    return {"id": message_id, "role": "user" if n % 2 else "assistant", "parts": parts}


def main(path: str, run: int) -> None:
    session = Sessions(path).session()
    n = 0
    while True:
        message_id = f"c{run}-{n}"
        session.append_message(expected(message_id))
        sys.stdout.write(message_id + "\n")
        sys.stdout.flush()
        n += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
