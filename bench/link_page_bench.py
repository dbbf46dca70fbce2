"""What a share link's page costs to render, per input character, side by side in one run.

The page renders markdown on the server (``backend.sharing.link_page``), for anyone holding
the link; its bounds (100,000 characters a message, 300,000 a page, the rest shown as escaped
source, a ``[`` weighing ``BRACKET_WEIGHT`` characters) and the memo of rendered pages rest
on these numbers. Each kind of text is rendered as one message of ``--chars`` characters; the
baseline is escaping the same text (what the page did before it rendered markdown). Printed:
microseconds per character and the ratio to the baseline; then a whole page of that text
past the page's budget: its first render, and a memo hit.

    python bench/link_page_bench.py [--chars 50000]
"""

from __future__ import annotations

import argparse
import html
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.sharing import SharedSnapshot, SnapshotMessage
from backend.sharing.link_page import MAX_MARKDOWN_COST, PAGE_MARKDOWN_BUDGET, render_cost
from backend.sharing.page_markdown import render_markdown
from chatsapp.routes.share_link import RenderedPages

KINDS: dict[str, str] = {
    "prose": "Lorem ipsum *dolor* sit `amet`, [a link](https://example.org).\n\n",
    "code": "```python\nfor n in range(10):\n    print(f'<{n}>')\n```\n\n",
    "math": "$x^2 + \\frac{a}{b}$ and ",
    "table": "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 20 + "\n",
    "open brackets": "[",
    "image brackets": "![",
    "emphasis runs": "*a ",
}


def seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def page_of(text: str) -> SharedSnapshot:
    """A snapshot of messages of ``text``, each at the message bound, more than the page's
    budget renders (the rest are shown as source)."""
    each = text * max(1, MAX_MARKDOWN_COST // render_cost(text))
    count = PAGE_MARKDOWN_BUDGET // render_cost(each) + 2
    messages = tuple(
        SnapshotMessage(author="pat", role="user", text=each, created_at=0) for _ in range(count)
    )
    return SharedSnapshot(title="t", created_at=0, messages=messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=50_000)
    chars = parser.parse_args().chars
    print(f"{'text':15} {'escape':>8} {'render':>8} {'ratio':>7} {'page, 1st':>10} {'memo hit':>9}")
    print(f"{'':15} {'µs/char':>8} {'µs/char':>8} {'':>7} {'render s':>10} {'ms':>9}")
    for name, unit in KINDS.items():
        text = (unit * (chars // len(unit) + 1))[:chars]
        base = seconds(lambda text=text: html.escape(text)) / chars * 1e6
        cost = seconds(lambda text=text: render_markdown(text, own_host="h")) / chars * 1e6
        snapshot, pages = page_of(unit), RenderedPages()
        first = seconds(lambda snapshot=snapshot, pages=pages: pages.page(snapshot, "h"))
        again = seconds(lambda snapshot=snapshot, pages=pages: pages.page(snapshot, "h"))
        print(
            f"{name:15} {base:8.3f} {cost:8.2f} {cost / base:6.0f}x {first:10.2f} "
            f"{again * 1000:9.2f}"
        )


if __name__ == "__main__":
    main()
