"""Browser-test fixtures: one real app per session, driven by Playwright in Debian's Chromium
headless shell."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.app_dumps import dump_tasks, dump_threads
from tests.support.app_server import (
    CHROMIUM,
    CHROMIUM_ARGS,
    AppServer,
    model_env,
    share_builds_in,
    start_app,
)
from tests.support.deadlines import WAIT_MS
from tests.support.fake_openai import FakeOpenAI
from tests.support.tab_traffic import TRAFFIC

# Every ``expect`` waits for its condition up to the suite's hang guard, not Playwright's 5 s:
# a live update can take seconds to reach a tab on 2 busy cores, and a passing check returns
# as soon as its condition holds.
expect.set_options(timeout=WAIT_MS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session", autouse=True)
def _one_build_per_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> None:
    """The browser-test workers of a run serve one production build: the first to need it
    makes it in the run's temporary folder (pytest removes it with the run's)."""
    if worker_id != "master":
        share_builds_in(tmp_path_factory.getbasetemp().parent / "app-build")


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("app")
    # A slower offline assistant, so tests can watch a reply while it streams.
    server = start_app(
        base / "data", base / "app.log", env={"CHATS_OFFLINE_CHUNK_DELAY_S": "0.12"}, mode="prod"
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def model_server() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server listing two models; each file sets its own reply
    (``FakeOpenAI.replying``)."""
    with FakeOpenAI() as server:
        server.models = ["fake-model", "other-model"]
        yield server


@pytest.fixture(scope="session")
def model_app(
    tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAI
) -> Iterator[AppServer]:
    """One production app answered by ``model_server`` for every file that asks for it (one
    browser worker runs all those files, tests/conftest.py: one build, not one per file).

    alice sets it up, so she is its admin; the files other than the model picker's sign in a
    person of their own, so each story's sidebar holds only its own chats.
    """
    base = tmp_path_factory.mktemp("model-app")
    server = start_app(base / "data", base / "app.log", env=model_env(model_server.base_url))
    server.session_token("alice", admin=True)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run the README test command, which installs it")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        TRAFFIC.watch(browser)
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """On a failed browser test, print what its tabs sent and heard last, the app's log, and
    where the app's threads (py-spy) and its event loop's tasks stand."""
    report = yield
    if report.when == "call" and report.failed:
        if "browser" in getattr(item, "funcargs", {}):
            report.sections.append(("tabs (latest socket frames)", TRAFFIC.report()))
        # Whichever apps the test used: the shared one, a file's own (any fixture name), or
        # each of a list of them (a story that stops and restarts its server).
        servers: list[AppServer] = []
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, AppServer):
                servers.append(value)
            elif isinstance(value, list):
                servers.extend(v for v in value if isinstance(v, AppServer))
        for server in servers:
            # The log's tail first: the task dump is written into the same log.
            title = f"app log (tail of {server.log_path.name})"
            report.sections.append((title, server.log_tail(80)))
            if server.process.poll() is None:  # a stopped one has no threads to show
                report.sections.append(("app threads (py-spy)", dump_threads(server)))
                report.sections.append(("app tasks (SIGUSR1)", dump_tasks(server)))
    return report


@pytest.fixture(autouse=True)
def _close_tabs_after_each_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tabs a test opened stay linked to shared state until closed: close them all."""
    yield
    if "browser" in request.fixturenames:
        browser: Browser = request.getfixturevalue("browser")
        for context in list(browser.contexts):
            context.close()


@pytest.fixture
def page(browser: Browser, app_server: AppServer) -> Iterator[Page]:
    """A tab signed in as alice (the person every story that is not about accounts uses)."""
    context = app_server.signed_in_context(browser)
    page = context.new_page()
    yield page
    context.close()
