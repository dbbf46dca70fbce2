"""``stream_bytes_per_token_1000_vs_10`` and ``stream_bytes_per_word`` of ``bench/ui_bench.py``:
websocket bytes a tab receives while a reply streams, in a long chat vs a short one (the
method is described in ``ui_bench``'s docstring)."""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field

from playwright.sync_api import Browser, Page, WebSocket

from bench.browser_tabs import TIMEOUT_MS, close_tab, load_average, new_page
from tests.support.app_server import AppServer
from tests.support.streamed_text import StreamedText, piece_level

SMALL_HISTORY, LARGE_HISTORY = 10, 1000
STREAM_TURNS = 3  # timed turns per chat (after one warm-up turn each)
PROMPT = "Tell me about it"  # stopwords only: no retrieval, the same reply in every chat
STREAM_GOAL = 1.2


@dataclass
class Frame:
    size: int  # payload bytes as delivered to the page
    delta: dict  # state path -> changed vars ({} for non-delta frames)


def parse_frame(payload: str | bytes) -> Frame:
    size = len(payload) if isinstance(payload, bytes) else len(payload.encode())
    delta: dict = {}
    if isinstance(payload, str):
        start = payload.find("[")
        if payload.startswith("42") and start >= 0:
            with contextlib.suppress(ValueError):
                body = json.loads(payload[start:])
                if isinstance(body, list) and len(body) > 1 and isinstance(body[1], dict):
                    delta = body[1].get("delta") or {}
    return Frame(size, delta)


def conversation_vars(frame: Frame) -> dict:
    for path, values in frame.delta.items():
        if path.endswith("____shared_conversation_state"):
            return values
    return {}


def var(values: dict, name: str) -> object:
    """A Reflex delta names a var ``<name>_rx_state_``."""
    return values.get(f"{name}_rx_state_", values.get(name))


@dataclass
class Turn:
    stream_bytes: int
    stream_frames: int
    words: int  # of the reply as shown once committed
    streamed_words: int  # of the streamed text when it last grew (the whole reply)
    reply: str
    turn_bytes: int  # every frame from Send until the reply is committed and shown
    end_frame_bytes: int  # the frame that ends streaming (carries the refreshed transcript)
    router_bytes: int  # of stream_bytes: the root state's router vars in each delta
    text_bytes: int  # of stream_bytes: the reply's pieces they carried
    others: Counter[str]  # other states/vars the streaming frames carried -> frame count
    entries_in_window: int
    late_start: int  # run-start deltas that arrived after the first streamed text


@dataclass
class StreamPage:
    page: Page
    frames: list[Frame] = field(default_factory=list)


def attach_counter(page: Page) -> StreamPage:
    target = StreamPage(page)

    def on_socket(socket: WebSocket) -> None:
        if "_event" in socket.url:  # the Reflex event socket, not a dev-server socket
            socket.on("framereceived", lambda payload: target.frames.append(parse_frame(payload)))

    page.on("websocket", on_socket)
    return target


def json_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def stream_turn(target: StreamPage) -> Turn:
    page = target.page
    target.frames.clear()
    page.locator("#composer").fill(PROMPT)
    page.locator("#composer").press("Enter")
    page.locator("#streaming-reply").wait_for(timeout=TIMEOUT_MS)
    page.locator("#streaming-reply").wait_for(state="detached", timeout=TIMEOUT_MS)
    # Playwright hands frames to Python apart from the DOM checks: wait for the frame that
    # ends streaming itself, then a little for trailing frames (the sidebar bump).
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not any(var(conversation_vars(f), "streaming") is False for f in target.frames[1:]):
        if time.monotonic() > deadline:
            break
        page.wait_for_timeout(50)
    page.wait_for_timeout(300)
    frames = list(target.frames)
    start = end = None
    entries = 0
    streamed = ""
    shown = StreamedText()
    for index, frame in enumerate(frames):
        values = conversation_vars(frame)
        carried = shown.apply(values)
        if start is None and carried:
            start = index
        if start is not None and end is None:
            if var(values, "streaming") is False:
                end = index
            elif carried:
                streamed = shown.text
        listed = var(values, "entries")
        if isinstance(listed, list):
            entries = len(listed)
    if start is None or end is None:
        raise RuntimeError(f"no streaming window among {len(frames)} frames")
    # Reflex fans a shared-state change out to each tab in its own task, so the run-start
    # delta (streaming on + the refreshed transcript) can reach the tab after the first
    # streamed text. It is the start transition, not streaming: left out, and counted.
    window, late_start = [], 0
    for frame in frames[start:end]:
        if var(conversation_vars(frame), "streaming") is True:
            late_start += 1
        else:
            window.append(frame)
    router = text_bytes = 0
    others: Counter[str] = Counter()
    for frame in window:
        for path, values in frame.delta.items():
            if path == "reflex___state____state":
                router += json_size(values)
            elif path.endswith("____shared_conversation_state"):
                for name, value in values.items():
                    if piece_level(name) is not None:
                        text_bytes += len(str(value).encode())
                    else:
                        others[f"conversation.{name.removesuffix('_rx_state_')}"] += 1
            else:
                others[path.rsplit("____", 1)[-1]] += 1
    reply = page.locator(".message-assistant .message-text").last.inner_text()
    return Turn(
        stream_bytes=sum(f.size for f in window),
        stream_frames=len(window),
        words=len(reply.split()),
        streamed_words=len(streamed.split()),
        reply=reply,
        turn_bytes=sum(f.size for f in frames),
        end_frame_bytes=frames[end].size,
        router_bytes=router,
        text_bytes=text_bytes,
        others=others,
        entries_in_window=entries,
        late_start=late_start,
    )


def loaded_window(frames: list[Frame]) -> tuple[int, int]:
    """Entries and bytes of the largest transcript a page received while loading."""
    best = (0, 0)
    for frame in frames:
        listed = var(conversation_vars(frame), "entries")
        if isinstance(listed, list):
            best = max(best, (len(listed), frame.size))
    return best


def measure_streaming(browser: Browser, app: AppServer, ids: dict[str, str]) -> str:
    pages: dict[int, StreamPage] = {}
    loaded: dict[int, tuple[int, int]] = {}
    for count in (SMALL_HISTORY, LARGE_HISTORY):
        page = new_page(browser, app)
        target = attach_counter(page)  # before goto: the socket opens during load
        page.goto(f"{app.url}/chat/{ids[f'history_{count}']}")
        page.locator("#chat-title").wait_for(timeout=TIMEOUT_MS)
        page.locator(".message-text").first.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)
        pages[count] = target
        loaded[count] = loaded_window(target.frames)
    for count in (SMALL_HISTORY, LARGE_HISTORY):
        stream_turn(pages[count])  # warm-up: a long thread is compacted at its first turn
    turns: dict[int, list[Turn]] = {SMALL_HISTORY: [], LARGE_HISTORY: []}
    for _ in range(STREAM_TURNS):
        for count in (SMALL_HISTORY, LARGE_HISTORY):
            turns[count].append(stream_turn(pages[count]))
    for target in pages.values():
        close_tab(target.page)

    def stats(count: int) -> dict:
        rows = turns[count]
        stream = sum(t.stream_bytes for t in rows)
        words = sum(t.words for t in rows)
        frames = sum(t.stream_frames for t in rows)
        others = sum((t.others for t in rows), Counter())
        return {
            "per_word": stream / words,
            "words": words / len(rows),
            "streamed_ok": all(t.streamed_words == t.words for t in rows),
            "frames": frames / len(rows),
            "per_frame": stream / frames,
            "router_per_frame": sum(t.router_bytes for t in rows) / frames,
            "text_per_frame": sum(t.text_bytes for t in rows) / frames,
            "turn_kb": sum(t.turn_bytes for t in rows) / len(rows) / 1024,
            "end_kb": sum(t.end_frame_bytes for t in rows) / len(rows) / 1024,
            "entries": rows[-1].entries_in_window,
            "others": {name: n / len(rows) for name, n in sorted(others.items())},
            "replies": {t.reply for t in rows},
            "late": sum(1 for t in rows if t.late_start),
        }

    small, large = stats(SMALL_HISTORY), stats(LARGE_HISTORY)
    same_reply = small["replies"] == large["replies"] and len(small["replies"]) == 1
    streamed_ok = small["streamed_ok"] and large["streamed_ok"]
    ratio = large["per_word"] / small["per_word"]

    def describe(count: int, s: dict) -> str:
        entries, size = loaded[count]
        others = ", ".join(f"{name} x{n:.2g}" for name, n in s["others"].items()) or "nothing"
        return (
            f"{count} msgs: {s['per_word']:.0f} B/word = {s['frames']:.0f} frames/reply x "
            f"{s['per_frame']:.0f} B (of which root router vars {s['router_per_frame']:.0f} B, "
            f"reply pieces {s['text_per_frame']:.0f} B; also per reply: {others}); "
            f"end-of-reply frame {s['end_kb']:.1f} KB ({s['entries']} entries shown), whole "
            f"turn {s['turn_kb']:.1f} KB; page load sent {entries} entries in "
            f"{size / 1024:.1f} KB; run-start delta overtaken by streamed text in "
            f"{s['late']}/{len(turns[count])} turns (left out)"
        )

    notes = [] if same_reply else ["REPLIES DIFFER between the chats"]
    if not streamed_ok:
        notes.append("STREAMED TEXT DIFFERS from the committed reply")
    absolute = (
        f"stream_bytes_per_word: {small['per_word']:.0f} B at {SMALL_HISTORY} msgs, "
        f"{large['per_word']:.0f} B at {LARGE_HISTORY} msgs (websocket payload while a reply "
        f"streams, per streamed word; of each frame, router vars "
        f"{small['router_per_frame']:.0f} B)"
    )
    return (
        absolute
        + "\n"
        + (
            f"stream_bytes_per_token_1000_vs_10: ratio={ratio:.2f} goal=<={STREAM_GOAL} "
            f"({describe(LARGE_HISTORY, large)}; {describe(SMALL_HISTORY, small)}; "
            f"{STREAM_TURNS} timed turns per chat, {small['words']:.0f}-word reply, words = tokens"
            f"{''.join('; ' + note for note in notes)}; {load_average()})"
        )
    )
