"""Three PostgreSQL nodes under Patroni with etcd, on one machine, for ``failover_bench.py``.

Node ``n1``..``n3`` listen on 127.0.0.2..4 (each its own loopback address, as separate
machines would have), each a Patroni process with its PostgreSQL run as an unprivileged user
(``nobody`` when we are root, as ``tests/support/postgres_server.py`` does). One etcd member on
127.0.0.1 holds the leader key (a deployment runs three; the bench kills database nodes, not
etcd). Patroni's configuration is written as JSON, which YAML reads as it is.

A node is "lost" the way a machine is: :meth:`Node.kill` sends SIGKILL to Patroni and to every
PostgreSQL process of the node at once (Patroni starts the postmaster in a session of its own,
so both process groups are killed); :meth:`Node.freeze` stops both groups (SIGSTOP) and
:meth:`Node.thaw` resumes them. A killed node is started again afterwards, so the next fault
meets three nodes: Patroni rewinds it (``pg_rewind``) and it follows the new leader.

Patroni runs as the unprivileged user too, so it needs an interpreter and packages that user
can read (a virtual environment under ``/root`` is not): ``python3 -m patroni`` with the
system's ``python3`` (``CHATS_BENCH_PYTHON`` to change it) and ``CHATS_BENCH_PATRONI_PATH`` a
folder holding the ``bench`` extra's Patroni, e.g. ``pip install --target /opt/patroni
"patroni[etcd3,psycopg3]==4.1.5"`` (added to the Patroni processes' ``PYTHONPATH`` only).
Without root, this interpreter and its packages (``pip install -e .[bench]``) serve as they are.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TTL_S = 20  # Patroni's minimum: a silent leader keeps the key this long
LOOP_WAIT_S = 2
RETRY_TIMEOUT_S = 5
HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
CLUSTER = "chats-bench"
PG_BIN = Path(os.environ.get("CHATS_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def get_json(url: str, timeout: float = 1.0) -> tuple[int, Any]:
    """(HTTP status, JSON body) of a Patroni REST call; (0, None) when nobody answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None
    except (OSError, ValueError):
        return 0, None


def _as_user() -> dict[str, int]:
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("nobody")
    return {"user": user.pw_uid, "group": user.pw_gid}


def _patroni_python() -> str:
    given = os.environ.get("CHATS_BENCH_PYTHON")
    if given:
        return given
    return "/usr/bin/python3" if os.geteuid() == 0 else sys.executable


@dataclass
class Node:
    name: str
    host: str
    folder: Path
    pg_port: int
    api_port: int
    config: dict[str, Any]
    process: subprocess.Popen[bytes] | None = None
    frozen_groups: list[int] = field(default_factory=list)

    @property
    def api(self) -> str:
        return f"http://{self.host}:{self.api_port}"

    def start(self) -> None:
        config_file = self.folder / "patroni.yml"
        config_file.write_text(json.dumps(self.config, indent=1))
        env = dict(os.environ)
        extra = os.environ.get("CHATS_BENCH_PATRONI_PATH")
        if extra:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, (env.get("PYTHONPATH"), extra)))
        env["HOME"] = str(self.folder)
        log = (self.folder / "patroni.log").open("ab")
        self.process = subprocess.Popen(
            [_patroni_python(), "-m", "patroni", str(config_file)],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, env=env,
            start_new_session=True, **_as_user(),
        )  # fmt: skip
        log.close()

    def postmaster_pid(self) -> int | None:
        try:
            pid = int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError, IndexError):
            return None

    def _groups(self) -> list[int]:
        groups = []
        if self.process is not None and self.process.poll() is None:
            groups.append(self.process.pid)  # its own session: pgid == pid
        postmaster = self.postmaster_pid()
        if postmaster is not None:
            with contextlib.suppress(ProcessLookupError):
                groups.append(os.getpgid(postmaster))
        return groups

    def kill(self) -> None:
        """The machine is gone: Patroni and PostgreSQL killed at once, nothing shut down."""
        for group in self._groups():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def freeze(self) -> None:
        self.frozen_groups = self._groups()
        for group in self.frozen_groups:
            os.killpg(group, signal.SIGSTOP)

    def thaw(self) -> None:
        for group in self.frozen_groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGCONT)
        self.frozen_groups = []

    def walreceivers(self) -> list[int]:
        """The pids of this node's WAL receiver (a standby's link to its leader)."""
        postmaster = self.postmaster_pid()
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) != postmaster:
                    continue
                cmdline = (stat.parent / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if b"walreceiver" in cmdline:
                found.append(int(stat.parent.name))
        return found

    def is_primary(self) -> bool:
        return get_json(f"{self.api}/primary", timeout=0.5)[0] == 200


class PatroniCluster:
    """See the module docstring. ``synchronous`` picks the replication mode under test."""

    def __init__(self, synchronous: bool) -> None:
        self.synchronous = synchronous
        self.folder = Path(tempfile.mkdtemp(prefix="chats-patroni-"))
        self.folder.chmod(0o755)  # the nodes' user walks through it to their own folders
        self.password = secrets.token_urlsafe(16)
        self.etcd: subprocess.Popen[bytes] | None = None
        self.etcd_port = free_port("127.0.0.1")
        self.nodes = [self._node(f"n{n + 1}", host) for n, host in enumerate(HOSTS)]

    def settings(self) -> dict[str, Any]:
        """The cluster-wide (DCS) settings: what each replication mode buys."""
        return {
            "ttl": TTL_S,
            "loop_wait": LOOP_WAIT_S,
            "retry_timeout": RETRY_TIMEOUT_S,
            # An asynchronous standby further behind than this is never promoted.
            "maximum_lag_on_failover": 16 * 1024 * 1024,
            "synchronous_mode": self.synchronous,
            "synchronous_mode_strict": self.synchronous,
            "postgresql": {
                "use_pg_rewind": True,
                "use_slots": True,
                "parameters": {
                    "synchronous_commit": "on",
                    "wal_log_hints": "on",
                    "full_page_writes": "on",
                    # Processes are killed, never the machine: the OS keeps what was written.
                    "fsync": "off",
                    "max_connections": 100,
                    "shared_buffers": "32MB",
                    "wal_keep_size": "256MB",
                },
            },
        }

    def _node(self, name: str, host: str) -> Node:
        folder = self.folder / name
        folder.mkdir()
        user = _as_user()
        if user:
            os.chown(folder, user["user"], user["group"])
        pg_port, api_port = free_port(host), free_port(host)
        password = self.password
        config = {
            "scope": CLUSTER,
            "name": name,
            "restapi": {"listen": f"{host}:{api_port}", "connect_address": f"{host}:{api_port}"},
            "etcd3": {"hosts": f"127.0.0.1:{self.etcd_port}"},
            "bootstrap": {
                "dcs": self.settings(),
                "initdb": [{"encoding": "UTF8"}, {"locale": "C"}],
            },
            "postgresql": {
                "listen": f"{host}:{pg_port}",
                "connect_address": f"{host}:{pg_port}",
                "data_dir": str(folder / "data"),
                "bin_dir": str(PG_BIN),
                "pgpass": str(folder / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": password},
                    "replication": {"username": "replicator", "password": password},
                    "rewind": {"username": "rewinder", "password": password},
                },
                "parameters": {"unix_socket_directories": str(folder)},
                "pg_hba": [
                    "local all all trust",
                    "host replication replicator 127.0.0.0/8 scram-sha-256",
                    "host all all 127.0.0.0/8 scram-sha-256",
                ],
                "remove_data_directory_on_rewind_failure": True,
                "remove_data_directory_on_diverged_timelines": True,
            },
        }
        return Node(name, host, folder, pg_port, api_port, config)

    def url(self) -> str:
        """The app's multi-host URL: libpq keeps the host that accepts writes."""
        hosts = ",".join(node.host for node in self.nodes)
        ports = ",".join(str(node.pg_port) for node in self.nodes)
        return (
            f"postgresql://postgres:{self.password}@/postgres?host={hosts}&port={ports}"
            "&target_session_attrs=read-write&connect_timeout=2"
        )

    def start(self) -> None:
        peer = free_port("127.0.0.1")
        log = (self.folder / "etcd.log").open("ab")
        self.etcd = subprocess.Popen(
            ["etcd", "--name", "bench", "--data-dir", str(self.folder / "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"bench=http://127.0.0.1:{peer}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        self.nodes[0].start()
        self.wait_for(lambda: self.leader() is not None, 120, "a first leader")
        for node in self.nodes[1:]:
            node.start()
        self.wait_healthy()

    def leader(self) -> Node | None:
        for node in self.nodes:
            if node.is_primary():
                return node
        return None

    def members(self) -> list[dict[str, Any]]:
        for node in self.nodes:
            status, body = get_json(f"{node.api}/cluster", timeout=0.5)
            if status == 200 and body:
                return list(body.get("members", []))
        return []

    def healthy(self) -> bool:
        """A leader, both others streaming from it, and (synchronous) one of them sync."""
        members = self.members()
        roles = [member.get("role") for member in members]
        streaming = [m for m in members if m.get("state") == "streaming"]
        if roles.count("leader") != 1 or len(streaming) != len(self.nodes) - 1:
            return False
        if any(m.get("lag", 0) not in (0, None) for m in streaming):
            return False
        return not self.synchronous or "sync_standby" in roles

    def wait_healthy(self, timeout_s: float = 180) -> None:
        self.wait_for(self.healthy, timeout_s, "three healthy nodes")

    def wait_for(self, check: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the cluster did not reach {what} in {timeout_s:.0f} s ({self.folder})")

    def stop(self) -> None:
        for node in self.nodes:
            node.thaw()
            node.kill()
        if self.etcd is not None:
            self.etcd.kill()
            self.etcd.wait()
        if os.environ.get("CHATS_BENCH_KEEP") is None:
            shutil.rmtree(self.folder, ignore_errors=True)
