"""A share link's page as HTML: the snapshot and nothing else, rendered like the app, no script.

Pure (no I/O): ``chatsapp.routes.share_link`` reads the snapshot per request and serves this.
The page holds the title and each message's author, time, text and (only when the owner
included them) files: no id of any chat or person, no memory, no live updates. Text renders
as markdown by the app's rules (:mod:`backend.sharing.page_markdown`: no raw HTML, safe links,
images that never load on their own, MathML, coloured code); names and titles are escaped.
Files are ``data:`` URLs of the stored bytes: images of the types an upload accepts inline,
other files as downloads.

**Bounded work.** Markdown rendering costs thousands of times more than escaping, and anyone
with the link can ask for the page (``bench/link_page_bench.py``). Most text costs a few µs a
character; each ``[`` starts a link label that markdown-it scans for, about
:data:`BRACKET_WEIGHT` times that. So a message's cost is its length plus that weight per
``[`` (:func:`render_cost`); a message over :data:`MAX_MARKDOWN_COST`, and every message once
the page has spent :data:`PAGE_MARKDOWN_BUDGET`, is shown as its source (escaped, as
written): the page's first render stays at a few seconds whatever the snapshot holds.
"""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime

from backend.errors import ShareLinkNotFoundError
from backend.sharing.page_markdown import CODE_STYLE, clean_text, render_markdown
from backend.sharing.values import SharedSnapshot, SnapshotAttachment, SnapshotMessage

MAX_MARKDOWN_COST = 100_000
PAGE_MARKDOWN_BUDGET = 300_000
BRACKET_WEIGHT = 20
INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PAGE_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "color:#1f2328;background:#fff;line-height:1.5}"
    "article{border-top:1px solid #d0d7de;padding:.75rem 0}"
    ".who{font-weight:600}.when{color:#59636e;font-size:.85em;margin-left:.5em}"
    ".text{overflow-wrap:anywhere}.source{white-space:pre-wrap}img{max-width:100%}"
    "pre{background:#f6f8fa;padding:.75em;overflow-x:auto;border-radius:6px}"
    "code{font-family:ui-monospace,monospace;font-size:.9em}"
    "table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:.25em .5em}"
    "blockquote{margin-left:0;padding-left:1em;border-left:3px solid #d0d7de;color:#59636e}"
    ".math.block{display:block;overflow-x:auto;margin:.5em 0}"
    "math[display=block]{display:block math}"
    ".image-not-shown,.remote-image{color:#59636e;font-style:italic}" + CODE_STYLE
)


def _escaped(text: str) -> str:
    return html.escape(clean_text(text))


def page(title: str, body: str) -> str:
    """A whole document: noindex, no referrer, the page's own inline style, no script."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="robots" content="noindex, nofollow">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_escaped(title)}</title><style>{PAGE_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    )


NOT_FOUND_PAGE = page(
    "Not found", f"<h1>Not found</h1><p>{html.escape(ShareLinkNotFoundError.MESSAGE)}</p>"
)


def render_snapshot(snapshot: SharedSnapshot, *, own_host: str) -> str:
    """The link's whole page; ``own_host`` is the host the page is served from (an image
    there is one the browser would fetch with the viewer's cookie: not shown)."""
    title = snapshot.title or "Shared chat"
    budget = PAGE_MARKDOWN_BUDGET
    parts = []
    for message in snapshot.messages:
        cost = render_cost(message.text)
        rendered = cost <= min(MAX_MARKDOWN_COST, budget)
        if rendered:
            budget -= cost
        parts.append(_message(message, own_host if rendered else None))
    shared = html.escape(_time(snapshot.created_at))
    return page(
        title,
        f"<h1>{_escaped(title)}</h1><p>A read-only copy, shared {shared}.</p>{''.join(parts)}",
    )


def render_cost(text: str) -> int:
    """What rendering ``text`` costs, in characters of plain prose (see the module)."""
    return len(text) + BRACKET_WEIGHT * text.count("[")


def _message(message: SnapshotMessage, own_host: str | None) -> str:
    """One message; ``own_host`` None: its text shown as source (over the bounds)."""
    if own_host is None:
        text = f'<div class="text source">{_escaped(message.text)}</div>'
    else:
        text = f'<div class="text">{render_markdown(message.text, own_host=own_host)}</div>'
    files = "".join(_attachment(file) for file in message.attachments)
    return (
        f'<article><div><span class="who">{_escaped(message.author or message.role)}</span>'
        f'<span class="when">{html.escape(_time(message.created_at))}</span></div>'
        f"{text}{files}</article>"
    )


def _attachment(file: SnapshotAttachment) -> str:
    media_type = file.media_type if "/" in file.media_type else "application/octet-stream"
    url = html.escape(f"data:{media_type};base64,{base64.b64encode(file.data).decode('ascii')}")
    name = _escaped(file.name)
    if media_type in INLINE_IMAGE_TYPES:
        return f'<div><img src="{url}" alt="{name}"></div>'
    return f'<div><a download="{name}" href="{url}">{name}</a></div>'


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
