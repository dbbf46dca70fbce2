"""An import whose reading runs in a child process with memory and processor limits.

Reading is where a hostile file does its damage (issue 27, hole 3: a nested document grew the
server to 24 GB until the kernel killed it, and every tab with it). The limits of
:mod:`backend.portability.limits` refuse the shapes known today; this is the bound for the
rest. :func:`import_file_bounded` starts ``python -m backend.portability.import_process``,
which lowers its own limits first (address space: its size after start-up plus
:attr:`ProcessBounds.max_memory_bytes`; processor time: :attr:`ProcessBounds.max_cpu_s`),
detects the format and sends each conversation, pickled, over its stdout (one larger than
:attr:`ProcessBounds.max_conversation_bytes` is refused there instead: this process holds each
one while writing it). This process writes them as
:func:`~backend.portability.importer.import_file` does, one chat at a time, each atomically.

A child that runs out of memory or time dies alone. Conversations written before stay, each
complete; the rest is one failure in the report saying which limit stopped it. When that
happens before the format is known, InvalidInputError says why and nothing was imported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from backend.chats import Chats
from backend.errors import InvalidInputError
from backend.portability.detect import detect
from backend.portability.document import Refused
from backend.portability.import_source import ImportSource
from backend.portability.importer import ImportItem, ProgressCallback, write_all
from backend.portability.limits import GiB, ImportLimits, MiB
from backend.portability.project_document import ImportedProject
from backend.portability.report import Failure, ImportReport

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">Q")
_EXIT_WAIT_S = 30  # for a child that has said all it had to say
_OUT_OF_MEMORY = 75  # the child's exit status after a MemoryError
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class ProcessBounds:
    """What the reading child may use, beyond what it needs to start."""

    max_memory_bytes: int = 2 * GiB  # one conversation in memory at a time: far more than any
    max_cpu_s: int = 3600  # about 100x a 1 GB export's reading time
    # One conversation as sent to this process, which holds it while writing it.
    max_conversation_bytes: int = 512 * MiB


def import_file_bounded(
    chats: Chats,
    path: str | Path,
    *,
    progress: ProgressCallback | None = None,
    limits: ImportLimits | None = None,
    bounds: ProcessBounds | None = None,
) -> ImportReport:
    """:func:`~backend.portability.importer.import_file`, with the reading in a bounded child."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    bounds = bounds or ProcessBounds()
    arguments = [
        str(path),
        json.dumps(dataclasses.asdict(limits or ImportLimits())),
        str(bounds.max_memory_bytes),
        str(bounds.max_cpu_s),
        str(bounds.max_conversation_bytes),
    ]
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, *arguments],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=os.environ | {"PYTHONPATH": _python_path()},
        )
        try:
            assert child.stdout is not None
            return _write_from(chats, path, child, child.stdout, bounds, progress)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
            if child.returncode:
                errors.seek(max(0, errors.seek(0, os.SEEK_END) - 4096))
                tail = errors.read().decode("utf-8", "replace")
                log.warning("import reader of %s ended %s: %s", path, child.returncode, tail)


def _write_from(
    chats: Chats,
    path: Path,
    child: subprocess.Popen[bytes],
    stream: IO[bytes],
    bounds: ProcessBounds,
    progress: ProgressCallback | None,
) -> ImportReport:
    frames = _frames(stream)
    kind, payload = next(frames, ("stopped", None))
    if kind == "refused":
        _reap(child)
        raise InvalidInputError(str(payload))
    if kind != "format":
        stopped = _stopped(child.wait(), bounds)
        raise InvalidInputError(f"{path}: {stopped}; nothing was imported")
    report = ImportReport(format=str(payload))
    ended: list[str] = []

    def items() -> Iterator[tuple[ImportItem, int]]:
        for kind, payload in frames:
            if kind == "done":
                ended.append("done")
                return
            yield payload
        ended.append("stopped")

    write_all(chats, items(), report, total=path.stat().st_size, progress=progress)
    if ended == ["stopped"]:
        stopped = _stopped(child.wait(), bounds)
        report.failures.append(
            Failure(f"{path.name} (from where it stopped on)", f"{stopped}; the rest was not read")
        )
    elif ended == ["done"]:
        _reap(child)
    # else the report's failure cap ended it: nothing more is wanted (the child is killed)
    return report


def _reap(child: subprocess.Popen[bytes]) -> None:
    """Wait for a child that has said all it had to say (killed after a while)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(_EXIT_WAIT_S)


def _stopped(returncode: int, bounds: ProcessBounds) -> str:
    # A C library (the JSON lexer, zlib) whose allocation fails under the limit may crash.
    if returncode in (_OUT_OF_MEMORY, -signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT):
        return f"reading it needed more than {bounds.max_memory_bytes // MiB} MiB of memory"
    if returncode == -signal.SIGXCPU:
        return f"reading it took more than {bounds.max_cpu_s} s of processor time"
    return f"reading it failed unexpectedly (status {returncode})"


def _frames(stream: IO[bytes]) -> Iterator[tuple[str, Any]]:
    """``(kind, payload)`` frames until the child's stdout ends."""
    while True:
        header = stream.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        body = stream.read(size)
        if len(body) < size:
            return
        yield pickle.loads(body)  # our own child's frames: the classes of this package


def _python_path() -> str:
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(_PROJECT_ROOT), inherited) if p)


# ── the child ───────────────────────────────────────────────────────


def _lower_limits(max_memory_bytes: int, max_cpu_s: int) -> None:
    import resource  # POSIX only; the child runs where the server does

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = math.ceil(usage.ru_utime + usage.ru_stime) + max_cpu_s
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    started = _address_space_bytes()
    if started is not None:
        total = started + max_memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (total, total))


def _address_space_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _encode(frame: tuple[str, Any]) -> bytes:
    return pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)


def _write(out: IO[bytes], body: bytes) -> None:
    out.write(_HEADER.pack(len(body)))
    out.write(body)
    out.flush()


def _send(out: IO[bytes], frame: tuple[str, Any]) -> None:
    _write(out, _encode(frame))


def _read(out: IO[bytes], path: str, limits: ImportLimits, max_conversation_bytes: int) -> None:
    with ImportSource(path, limits) as source:
        try:
            found = detect(source)
        except InvalidInputError as exc:
            _send(out, ("refused", str(exc)))
            return
        _send(out, ("format", found.NAME))
        for item in found.conversations(source):
            frame = _encode(("item", (item, source.position())))
            if len(frame) > max_conversation_bytes and not isinstance(item, Refused):
                name = (
                    item.label
                    if isinstance(item, ImportedProject)
                    else f"{item.source.format} conversation {item.source.source_id} {item.title!r}"
                )
                limit = max_conversation_bytes // MiB
                refused = Refused(name, f"larger than {limit} MiB, more than one import may hold")
                frame = _encode(("item", (refused, source.position())))
            _write(out, frame)
    _send(out, ("done", None))


def main(argv: list[str]) -> int:
    path, limits_json, max_memory, max_cpu, max_conversation = argv
    # Frames go to the original stdout; anything printed by mistake goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _lower_limits(int(max_memory), int(max_cpu))
    try:
        _read(out, path, ImportLimits(**json.loads(limits_json)), int(max_conversation))
    except MemoryError:
        os._exit(_OUT_OF_MEMORY)  # nothing can be allocated safely any more
    except BrokenPipeError:
        return 0  # the parent stopped reading (it has all it wants)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
