"""Which process wrote a record, and whether it can still be writing: ``host:pid:name`` signatures.

Leases and claimed runs are signed with the process that took them, so another process on the
same data folder can tell a live writer from one that died (crash, SIGKILL, restart) and take
over its work. The rule, in one place:

* a signature of **another host** is presumed alive: SQLite files are not shared across hosts in
  this design, so a foreign host is never proven dead;
* a signature of **this process** is :data:`THIS_PROCESS`: only the caller's own bookkeeping
  (leases held, live holders) knows whether it is still in use;
* another process on this host is alive until its pid is gone or a zombie (killed, not yet
  reaped). A recycled pid makes a dead signer look alive until that process exits too: taking
  over is then postponed, never wrong.
"""

from __future__ import annotations

import enum
import os
import socket
from pathlib import Path

HOST = socket.gethostname()


class Signer(enum.Enum):
    THIS_PROCESS = "this process"
    ALIVE = "alive"
    GONE = "gone"


THIS_PROCESS = Signer.THIS_PROCESS


def sign(name: str) -> str:
    """``host:pid:name`` for a record this process writes."""
    return f"{HOST}:{os.getpid()}:{name}"


def signer_state(signature: str) -> Signer:
    """Whether the process that wrote ``signature`` is this one, alive, or gone for good.

    A signature that does not parse as ``host:pid:…`` is presumed alive (never taken over).
    """
    host, _, rest = signature.partition(":")
    pid_text, _, _ = rest.partition(":")
    if host != HOST or not pid_text.isdigit():
        return Signer.ALIVE
    pid = int(pid_text)
    if pid == os.getpid():
        return Signer.THIS_PROCESS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return Signer.GONE
    except PermissionError:
        return Signer.ALIVE
    try:  # a killed child not yet reaped is a zombie: it writes nothing any more
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return Signer.ALIVE
    return Signer.GONE if stat.rpartition(")")[2].split()[:1] == ["Z"] else Signer.ALIVE
