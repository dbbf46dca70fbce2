"""A tab whose server went away says so, then stops drawing: a tab left open while its server
is down (a restart, a laptop back from sleep) costs its device nothing but the reconnect
attempts. When the server is back, the notice goes by itself.

Production build, its own data folder: the story stops its server and starts it again on the
same address (``restart_app``).
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.e2e.helpers import open_tab
from tests.support.app_server import restart_app, start_app
from tests.support.deadlines import WAIT_MS

# Every animation of the page has ended or is paused: nothing makes the tab draw frames.
NOTHING_ANIMATES = "() => document.getAnimations().every(a => a.playState !== 'running')"


def test_a_tab_that_lost_its_server_says_so_stops_animating_and_clears_when_it_is_back(
    browser: Browser, data_dir: Path
):
    server = start_app(data_dir, data_dir.parent / "first.log")
    try:
        tab = open_tab(browser, server)
        notice = tab.locator("#connection-lost")
        expect(notice).to_have_count(0)

        server.stop(keep_build=True)
        expect(notice).to_be_visible(timeout=WAIT_MS)
        expect(notice).to_have_attribute("role", "status")
        expect(notice).to_contain_text("Reconnecting")
        # It pulses to catch the eye, a few times, not for as long as the server is away...
        name, count = notice.evaluate(
            "el => ((s) => [s.animationName, s.animationIterationCount])(getComputedStyle(el))"
        )
        assert name != "none" and count == "3", (name, count)
        # ...after which nothing on the page animates while it waits.
        tab.wait_for_function(NOTHING_ANIMATES, timeout=WAIT_MS)
        # Reconnecting keeps failing: Reflex's toast says where it tries (kept as it was).
        expect(tab.locator("[data-sonner-toast]")).to_contain_text(
            "Cannot connect to server", timeout=WAIT_MS
        )

        server = restart_app(server, data_dir.parent / "second.log")
        expect(notice).to_have_count(0, timeout=WAIT_MS)
        expect(tab.locator("#sidebar")).to_be_visible()
    finally:
        server.stop()
