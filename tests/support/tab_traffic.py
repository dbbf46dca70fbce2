"""What each open browser tab said and heard lately, for a failed browser story's report.

A story that waits 60 s for a click's effect cannot tell, from the app's side alone, whether
the click's event ever reached the server: the app's log and tasks show an idle server either
way. The tab's own socket frames can: the event the click queued (sent or not), the server's
answer to it (a delta marked final, or nothing), and what the page printed to its console.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field

from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, WebSocket

KEPT_PER_TAB = 60  # the latest lines of each tab: enough to see the last few events' round trips
SENT_KEPT = 10  # the latest events each tab sent, kept apart: a streamed reply's updates
# push them out of the lines above within seconds
FRAME_CHARS = 300
VISIBLE_TEXT_CHARS = 600


# When (seconds since the tab opened), what, and the socket frame if it is one: a frame is
# put into words only for a report, so the stories pay nothing for the frames they never show.
_Line = tuple[float, str, str | bytes | None]


@dataclass
class _Tab:
    page: Page
    opened: float
    lines: deque[_Line] = field(default_factory=lambda: deque(maxlen=KEPT_PER_TAB))
    sent: deque[_Line] = field(default_factory=lambda: deque(maxlen=SENT_KEPT))

    def note(self, what: str, frame: str | bytes | None = None) -> None:
        self.lines.append((time.monotonic() - self.opened, what, frame))

    def note_sent(self, frame: str | bytes) -> None:
        line = (time.monotonic() - self.opened, "→", frame)
        self.sent.append(line)
        self.lines.append(line)


def _line_text(line: _Line) -> str:
    seconds, what, frame = line
    return f"{seconds:8.3f}s {what if frame is None else f'{what} {_frame_text(frame)}'}"


def _clip(text: str) -> str:
    return text if len(text) <= FRAME_CHARS else text[:FRAME_CHARS] + f"… ({len(text)} chars)"


def _short(name: str) -> str:
    """``reflex___state____state.chatsapp___states___agents____agents_tab_state.save`` →
    ``agents_tab_state.save``: the state's own name and what follows it."""
    head, dot, tail = name.rpartition(".")
    state = head.rsplit("____", 1)[-1] if head else ""
    if "____" in tail:  # a state path with no event name after it
        return tail.rsplit("____", 1)[-1]
    return f"{state}{dot}{tail}" if state else tail


def _frame_text(payload: str | bytes) -> str:
    """A Reflex socket frame in one line: an event's name and payload, or an update's states,
    client events and whether it was the event's last (``final``)."""
    if not isinstance(payload, str):
        return f"<{len(payload)} bytes>"
    kind, _, body = payload.partition("[")
    try:
        message = json.loads("[" + body) if body else None
    except json.JSONDecodeError:
        message = None
    if not kind.startswith("42") or not isinstance(message, list) or len(message) < 2:
        return _clip(payload)
    data = message[1]
    if not isinstance(data, dict):
        return _clip(payload)
    if "name" in data:
        shown = json.dumps(data.get("payload", {}), ensure_ascii=False)
        return _clip(f"event {_short(data['name'])} {shown}")
    parts = []
    if data.get("delta"):
        parts.append("delta " + ", ".join(_short(state) for state in data["delta"]))
    if data.get("events"):
        parts.append("client events " + ", ".join(e.get("name", "?") for e in data["events"]))
    if "final" in data:
        parts.append(f"final={data['final']}")
    return _clip("update " + "; ".join(parts))


class TabTraffic:
    """Keeps the latest socket frames and console lines of every tab of one browser."""

    def __init__(self) -> None:
        self._tabs: dict[int, _Tab] = {}

    def watch(self, browser: Browser) -> None:
        """Every context ``browser`` makes from now on has its tabs watched."""
        make_context = browser.new_context

        def new_context(*args: object, **kwargs: object) -> BrowserContext:
            context = make_context(*args, **kwargs)  # type: ignore[arg-type]
            context.on("page", self._watch_page)
            return context

        browser.new_context = new_context  # type: ignore[method-assign]

    def _watch_page(self, page: Page) -> None:
        tab = _Tab(page, time.monotonic())
        self._tabs[id(page)] = tab
        page.on("close", lambda _page: self._tabs.pop(id(page), None))
        page.on(
            "framenavigated",
            lambda frame: (
                tab.note(f"navigated {frame.url}") if frame.parent_frame is None else None
            ),
        )
        page.on("console", lambda message: self._console(tab, message))
        page.on("pageerror", lambda error: tab.note(f"page error: {error}"))
        page.on("websocket", lambda socket: self._watch_socket(tab, socket))

    @staticmethod
    def _console(tab: _Tab, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            tab.note(f"console {message.type}: {_clip(message.text)}")

    @staticmethod
    def _watch_socket(tab: _Tab, socket: WebSocket) -> None:
        tab.note(f"socket open {socket.url}")
        socket.on("framesent", tab.note_sent)
        socket.on("framereceived", lambda payload: tab.note("←", payload))
        socket.on("close", lambda _socket: tab.note("socket closed"))
        socket.on("socketerror", lambda error: tab.note(f"socket error: {error}"))

    def report(self) -> str:
        """Each open tab: its address, its visible text's start, the latest events it sent,
        its latest lines."""
        parts: list[str] = []
        for tab in list(self._tabs.values()):
            try:
                visible = tab.page.inner_text("body", timeout=2_000)
            except Exception as exc:  # a report must not fail the report
                visible = f"<unreadable: {type(exc).__name__}>"
            visible = " ".join(visible.split())[:VISIBLE_TEXT_CHARS]
            parts.append(
                f"── tab {tab.page.url}\nvisible: {visible}\nsent last:\n"
                + "\n".join(map(_line_text, tab.sent))
                + "\nlatest:\n"
                + "\n".join(map(_line_text, tab.lines))
            )
        return "\n\n".join(parts) or "no tab open"


TRAFFIC = TabTraffic()
"""The tabs of this process's browser (one per browser-test worker): tests/e2e/conftest.py
watches its browser with it and prints its report for a failed story."""
