"""What the browser benchmarks share: the benchmark's account, a private copy of the app to run
from, one window per tab, and how the figures are summarised (Chromium and its flags are the
browser tests' own, ``tests/e2e/conftest``)."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from pathlib import Path

from playwright.sync_api import Browser, Page

from tests.support.app_server import AppServer, project_web_dir

ROOT = Path(__file__).resolve().parent.parent
USERNAME = "bench"  # signed in through the app's accounts, as every tab is now
TIMEOUT_MS = 60_000


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def bench_user(app: AppServer) -> str:
    """Create the benchmark's account (its first, so an admin) and return its user id."""
    app.session_token(USERNAME)
    return app.user_id(USERNAME)


def private_tree(target: Path) -> Path:
    """A private copy of the app to run from, so a benchmark measures the code it started with.

    Each app builds its pages in a frontend folder of its own (``tests/support/app_server``), but
    it still runs the sources it is started from: an edit, a checkout or an e2e run's set-up
    during a long run would change what is measured. The sources are copied; ``.web`` is copied
    without its build output and ``node_modules``, which is hard-linked (nothing writes into
    it at run time except the dev server's ``.vite`` cache, which is copied); ``.tools`` is
    linked.
    """
    target.mkdir(parents=True)
    for name in ("backend", "chatsapp", "assets", "reflex.lock"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, target / name, symlinks=True, ignore=_PYCACHE)
    shutil.copy2(ROOT / "rxconfig.py", target / "rxconfig.py")
    (target / ".tools").symlink_to(ROOT / ".tools")
    web = project_web_dir()  # a fresh clone has none until something sets it up
    shutil.copytree(
        web, target / ".web", symlinks=True, ignore=shutil.ignore_patterns("node_modules", "build")
    )
    modules = web / "node_modules"
    shutil.copytree(
        modules,
        target / ".web/node_modules",
        symlinks=True,
        copy_function=os.link,
        ignore=lambda folder, _names: [".vite"] if Path(folder) == modules else [],
    )
    if (modules / ".vite").is_dir():
        shutil.copytree(modules / ".vite", target / ".web/node_modules/.vite", symlinks=True)
    return target


_PYCACHE = shutil.ignore_patterns("__pycache__")


def new_page(browser: Browser, app: AppServer, init_script: str = "") -> Page:
    """A page in its own context, i.e. its own window.

    Pages sharing a context share one headless window: only the newest is rendered at full
    rate (the others get ~2 animation frames a second), which stalls Playwright's clicks there.
    One window per tab keeps every tab live, as tabs side by side would be.
    """
    context = app.signed_in_context(browser, USERNAME, viewport={"width": 1280, "height": 800})
    if init_script:
        context.add_init_script(init_script)
    return context.new_page()


def close_tab(page: Page) -> None:
    page.context.close()


def load_average() -> str:
    with contextlib.suppress(OSError):
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    return "load unknown"
