"""Acknowledged writes across the loss of the database machine (issue 26 item 4; not a test).

    .venv/bin/python bench/failover_bench.py [--mode sync|async|both] [--writers 3]

Starts etcd and three PostgreSQL 15 nodes under Patroni on 127.0.0.2-.4
(``bench/patroni_cluster.py``; Patroni and etcd are the ``bench`` extra and Debian's
``etcd-server``), then writes through Chats' own storage layer with ``CHATS_STORAGE`` the
cluster's multi-host URL (``target_session_attrs=read-write``: libpq keeps the host that
accepts writes; no proxy, so nothing but the database nodes can fail in the path):

* ``append`` writers: ``Sessions(path).session().append_message`` (one conversation each);
* ``cas`` writers: session state's compare-and-set (``backend.runtime.state``), each put
  writing ``{"n": version}`` at the version it read.

Every acknowledged write is recorded. Meanwhile the leader is lost six times: SIGKILL (Patroni
and PostgreSQL of the node at once, the machine gone) five times and SIGSTOP once (frozen,
resumed once another node accepts writes). Before each kill both standbys' WAL receivers are
stopped for :data:`STALL_S` (a replication link that lags) while the writers go on: with
asynchronous replication the leader acknowledges commits no standby has, which is what makes
losses likely there; with synchronous replication those commits wait instead. A killed node is
started again and rejoins (``pg_rewind``) before the next fault.

A write whose connection is lost is never sent again blindly: the scope resolves its commit
(``backend/storage/postgres/outcome.py``; committed is success, the rest an error saying
"aborted" or "unknown"). An append is then repeated with the same message id (an append of an
existing id writes nothing); a compare-and-set repeats the same put (idempotent when it already
landed), and a retry that fails although the stored state is the one it wrote or older than it
read is counted as a false failure (goal 0).

At the end, on the leader then in place, every acknowledged append must be there and each
state must be at least at its last acknowledged version. Printed per mode: acknowledged writes
lost, seconds from each fault until writes were accepted again (p50 and max, for the first
writer and for all of them), the commit outcomes resolved, and the retries.
``CHATS_BENCH_DEBUG=1`` also prints, per fault and writer, when its first write after the
fault was sent and acknowledged; ``CHATS_BENCH_KEEP=1`` keeps the cluster's folder (logs).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.clock import now_ms
from backend.config import PostgresLocation, parse_storage
from backend.errors import StaleVersionError, StorageError
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.state import SessionStateStore
from backend.sessions import Sessions
from backend.storage.engines import PostgresStorage
from backend.storage.postgres import CommitOutcomeError
from bench.patroni_cluster import Node, PatroniCluster

FAULTS = ("kill", "kill", "kill", "freeze", "kill", "kill")
STALL_S = 0.5
"""How long the standbys' WAL receivers are stopped right before a kill (writes go on)."""
CALM_S = 3.0
"""Writing on a healthy cluster before each fault."""
PAUSE_S = 0.05
ROOT = Path("/bench/failover")  # a logical root: on PostgreSQL nothing is made on disk


@dataclass
class Writer:
    """One writer thread's record: what was acknowledged, when, and what went wrong."""

    name: str
    kind: str
    acks: list[tuple[str, float, float]] = field(default_factory=list)  # key, sent, acked
    errors: Counter[str] = field(default_factory=Counter)
    lost_seen: int = 0  # compare-and-set versions found gone (the state went back)
    last_version: int = 0
    retries: int = 0
    retries_found_landed: int = 0
    false_failures: int = 0


def append_writer(writer: Writer, stop: threading.Event) -> None:
    path = ROOT / f"{writer.name}.sqlite"
    sessions: Sessions | None = None
    number = 0
    while not stop.is_set():
        key = f"{writer.name}-{number}"
        message = {"id": key, "role": "user", "parts": [{"type": "text", "text": key * 20}]}
        retried = False
        while not stop.is_set():
            sent = time.monotonic()
            try:
                if sessions is None:
                    sessions = Sessions(path)
                result = sessions.session().append_message(message)
            except (StorageError, OSError) as exc:
                writer.errors[_kind(exc)] += 1
                sessions = _closed(sessions)
                retried = True
                time.sleep(PAUSE_S)
                continue
            writer.acks.append((key, sent, time.monotonic()))
            if retried:
                writer.retries += 1
                writer.retries_found_landed += not result.inserted
            number += 1
            break
    _closed(sessions)


def cas_writer(writer: Writer, url: str, stop: threading.Event) -> None:
    conversation = writer.name
    storage = PostgresStorage(_location(url))
    states: SessionStateStore | None = None
    version: int | None = None
    try:
        while not stop.is_set():
            try:
                if states is None:
                    store = runtime_store_for(storage.open_scope(str(ROOT / f"{conversation}")))
                    store.ensure_conversation(
                        conversation, tenant_id="t", owner_principal_id="p", participant_ids=(),
                        agent_id="a", agent_version_policy="latest", agent_version=None,
                        title="failover", now=now_ms(),
                    )  # fmt: skip
                    states = SessionStateStore(store, clock=now_ms)
                if version is None:
                    version = states.get(conversation).version
                version = _one_put(writer, states, conversation, version, stop)
            except (StorageError, OSError) as exc:
                writer.errors[_kind(exc)] += 1
                states = None
                time.sleep(PAUSE_S)
    finally:
        storage.close()


def _one_put(
    writer: Writer, states: SessionStateStore, conversation: str, version: int, stop: Any
) -> int:
    """Put ``version + 1`` until it is acknowledged or found impossible; the version now."""
    retried = False
    while not stop.is_set():
        sent = time.monotonic()
        try:
            states.put(conversation, expected_version=version, state={"n": version + 1})
        except StaleVersionError:
            current = states.get(conversation)
            if current.version < version:  # acknowledged versions are gone
                writer.lost_seen += writer.last_version - current.version
                writer.last_version = current.version
            elif retried:
                writer.false_failures += 1
            else:
                writer.errors["stale without a retry"] += 1
            return current.version
        except (StorageError, OSError) as exc:
            writer.errors[_kind(exc)] += 1
            retried = True
            time.sleep(PAUSE_S)
            continue
        writer.acks.append((str(version + 1), sent, time.monotonic()))
        writer.last_version = version + 1
        writer.retries += retried
        return version + 1
    return version


def _kind(exc: BaseException) -> str:
    if isinstance(exc, CommitOutcomeError):
        return f"commit {exc.outcome}"
    return type(exc).__name__


def _closed(sessions: Sessions | None) -> None:
    if sessions is not None:
        with contextlib.suppress(Exception):
            sessions.close()
    return None


def _location(url: str) -> PostgresLocation:
    location = parse_storage(url)
    assert isinstance(location, PostgresLocation)
    return location


@dataclass
class Fault:
    kind: str
    old: str
    at: float
    new: str = ""
    elected_s: float = 0.0


def inject(cluster: PatroniCluster, kind: str) -> Fault:
    """One loss of the leader (see the module docstring); returns once another node leads."""
    cluster.wait_healthy()
    time.sleep(CALM_S)
    leader = cluster.leader()
    assert leader is not None
    standbys = [node for node in cluster.nodes if node is not leader]
    if kind == "kill":
        stalled = [pid for node in standbys for pid in node.walreceivers()]
        _signal(stalled, signal.SIGSTOP)
        time.sleep(STALL_S)
        fault = Fault(kind, leader.name, time.monotonic())
        leader.kill()
        _signal(stalled, signal.SIGCONT)
    else:
        fault = Fault(kind, leader.name, time.monotonic())
        leader.freeze()
    new = _new_leader(cluster, leader)
    fault.new, fault.elected_s = new.name, time.monotonic() - fault.at
    if kind == "kill":
        leader.start()
    else:
        leader.thaw()
    return fault


def _new_leader(cluster: PatroniCluster, old: Node) -> Node:
    found: list[Node] = []

    def elected() -> bool:
        leader = cluster.leader()
        found[:] = [leader] if leader is not None and leader is not old else []
        return bool(found)

    cluster.wait_for(elected, 120, "a new leader")
    return found[0]


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def recovery_s(writers: list[Writer], fault: Fault, until: float) -> list[float]:
    """Per writer: seconds from the fault to its first acknowledged write sent after it."""
    found = []
    for writer in writers:
        after = [acked for _, sent, acked in writer.acks if fault.at <= sent < until]
        if after:
            found.append(min(after) - fault.at)
            if os.environ.get("CHATS_BENCH_DEBUG"):
                first = min(
                    (a for a in writer.acks if fault.at <= a[1] < until), key=lambda a: a[2]
                )
                print("   ", writer.name, fault.kind, [round(t - fault.at, 3) for t in first[1:]])
    return found


def verify(url: str, writers: list[Writer]) -> dict[str, int]:
    """Acknowledged writes missing on the leader now, per kind."""
    lost = {"append": 0, "cas": 0}
    previous = os.environ.get("CHATS_STORAGE")
    os.environ["CHATS_STORAGE"] = url
    storage = PostgresStorage(_location(url))
    try:
        for writer in writers:
            if writer.kind == "append":
                with Sessions(ROOT / f"{writer.name}.sqlite") as sessions:
                    session = sessions.session()
                    lost["append"] += sum(
                        session.get_message(key) is None for key, _, _ in writer.acks
                    )
            else:
                scope = storage.open_scope(str(ROOT / writer.name))
                states = SessionStateStore(runtime_store_for(scope), clock=now_ms)
                stored = states.get(writer.name).version
                lost["cas"] += writer.lost_seen + max(0, writer.last_version - stored)
                scope.close()
    finally:
        storage.close()
        if previous is None:
            os.environ.pop("CHATS_STORAGE", None)
        else:
            os.environ["CHATS_STORAGE"] = previous
    return lost


def run_mode(synchronous: bool, writers_per_kind: int, schedule: tuple[str, ...]) -> None:
    mode = "sync" if synchronous else "async"
    cluster = PatroniCluster(synchronous)
    started = time.monotonic()
    try:
        cluster.start()
        url = cluster.url()
        os.environ["CHATS_STORAGE"] = url
        holder = PostgresStorage(_location(url))  # keeps the engine (and its counts) alive
        stop = threading.Event()
        writers = [Writer(f"{mode}-append-{n}", "append") for n in range(writers_per_kind)]
        writers += [Writer(f"{mode}-cas-{n}", "cas") for n in range(writers_per_kind)]
        threads = [
            threading.Thread(
                target=append_writer if w.kind == "append" else cas_writer,
                args=(w, stop) if w.kind == "append" else (w, url, stop),
                daemon=True,
            )
            for w in writers
        ]
        for thread in threads:
            thread.start()
        faults = []
        for kind in schedule:
            fault = inject(cluster, kind)
            faults.append(fault)
            print(
                f"  {mode}: {kind} {fault.old} -> {fault.new} leads after {fault.elected_s:.1f} s",
                flush=True,
            )
        cluster.wait_healthy()
        time.sleep(CALM_S)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        cluster.wait_healthy()
        lost = verify(url, writers)
        resolved = Counter(holder.engine.lost_commits)
        holder.close()
        report(mode, cluster, writers, faults, lost, resolved, time.monotonic() - started)
    finally:
        cluster.stop()


def report(
    mode: str,
    cluster: PatroniCluster,
    writers: list[Writer],
    faults: list[Fault],
    lost: dict[str, int],
    resolved: Counter[str],
    seconds: float,
) -> None:
    ends = [fault.at for fault in faults[1:]] + [float("inf")]
    first, every = [], []
    for fault, end in zip(faults, ends, strict=True):
        per_writer = recovery_s(writers, fault, end)
        if per_writer:
            first.append(min(per_writer))
            every.append(max(per_writer))
    acked = Counter({kind: 0 for kind in ("append", "cas")})
    errors: Counter[str] = Counter()
    for writer in writers:
        acked[writer.kind] += len(writer.acks)
        errors.update(writer.errors)
    settings = cluster.settings()
    print(
        f"failover_{mode}_acknowledged_writes_lost: {lost['append'] + lost['cas']} "
        f"goal={'0' if mode == 'sync' else 'possible'} (appends {lost['append']} of "
        f"{acked['append']}, compare-and-sets {lost['cas']} of {acked['cas']}; "
        f"synchronous_mode={settings['synchronous_mode']}, "
        f"synchronous_mode_strict={settings['synchronous_mode_strict']}, "
        f"synchronous_commit=on; {len(faults)} faults: "
        f"{', '.join(f.kind for f in faults)})",
        flush=True,
    )
    print(
        f"failover_{mode}_seconds_until_writes_accepted: p50={_p50(first)} max={_max(first)} "
        f"(first writer; every writer p50={_p50(every)} max={_max(every)}; writes resumed "
        f"after {len(first)} of {len(faults)} faults; new leader elected after "
        f"{', '.join(f'{f.elected_s:.1f}' for f in faults)} s; ttl={settings['ttl']} "
        f"loop_wait={settings['loop_wait']} retry_timeout={settings['retry_timeout']})",
        flush=True,
    )
    retries = sum(w.retries for w in writers)
    landed = sum(w.retries_found_landed for w in writers)
    false_failures = sum(w.false_failures for w in writers)
    print(
        f"failover_{mode}_commit_outcomes_resolved: {sum(resolved.values())} "
        f"({dict(resolved) or 'none'}); retried writes {retries} (appends found already "
        f"stored {landed}); retried compare-and-sets failing falsely: {false_failures} goal=0; "
        f"errors seen by writers {dict(errors)}; {seconds:.0f} s",
        flush=True,
    )


def _p50(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "none"


def _max(values: list[float]) -> str:
    return f"{max(values):.1f}" if values else "none"


def main() -> None:
    # The pool's warnings while no primary answers are the failover itself, not news.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("sync", "async", "both"), default="both")
    parser.add_argument("--writers", type=int, default=3, help="writers of each kind")
    parser.add_argument("--faults", type=int, default=len(FAULTS), help="the first N faults")
    args = parser.parse_args()
    for synchronous in (True, False):
        if args.mode in ("both", "sync" if synchronous else "async"):
            run_mode(synchronous, args.writers, FAULTS[: args.faults])


if __name__ == "__main__":
    main()
