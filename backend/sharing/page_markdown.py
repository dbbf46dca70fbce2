"""Markdown on a share link's page, rendered on the server by the app's safety rules.

The app renders a message with react-markdown (``chatsapp/components/markdown.py``); the link
page runs no script, so this module renders the same text to HTML with ``markdown-it-py``
under the same rules (docs/security.md, "What a message can make the browser do"):

* **No raw HTML**: ``html`` is off, so ``<script>``, ``<img onerror=…>`` and every other tag
  a message holds is shown as text.
* **Links**: an address keeps only the protocols react-markdown keeps (http, https, mailto,
  xmpp, irc, ircs) or none (a relative address); any other (``javascript:``, ``data:``…)
  loses its link and stays text. A kept link carries
  ``rel="nofollow noopener noreferrer"``.
* **Images** never load on their own (``markdown_image.jsx``'s rule): a ``data:`` image of a
  type an upload accepts is shown inline; a remote http(s) address becomes a link naming its
  host, fetched only if clicked; an address on this page's host, a relative address, or
  anything else is "[image not shown]" (``blob:`` names another page's memory: not here).
* **Math** (``$…$``, ``$$…$$``) becomes MathML through an allow-list (:mod:`page_math`).
* **Code**: fenced blocks with a known language are coloured by Pygments, which escapes the
  code; longer blocks than :data:`MAX_HIGHLIGHT_CHARS`, or past the page's budget, are shown
  plain, so a crafted block cannot make one request slow.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from backend.sharing.page_math import MathNotShown, latex_to_mathml

SAFE_PROTOCOL = re.compile(r"(?i)https?|ircs?|mailto|xmpp")
INLINE_IMAGE = re.compile(r"(?i)data:image/(?:png|jpeg|gif|webp)[;,]")
MAX_HIGHLIGHT_CHARS = 20_000
PAGE_HIGHLIGHT_BUDGET = 400_000
"""Characters of code one page colours; the rest is shown plain (escaped all the same)."""
LINK_REL = "nofollow noopener noreferrer"
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="tok-")
CODE_STYLE = _FORMATTER.get_style_defs(".code")
"""The colours of highlighted code, for the page's own ``<style>``."""


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (a page is UTF-8: one would fail
    the response), and pairs written as two halves joined into their character."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def safe_link(address: str) -> str:
    """``address`` if react-markdown would keep it as a link, else ``""``: a safe protocol,
    or none (no colon before the first ``/``, ``?`` or ``#``)."""
    colon = address.find(":")
    if colon == -1:
        return address
    for mark in "/?#":
        found = address.find(mark)
        if found != -1 and found < colon:
            return address
    return address if SAFE_PROTOCOL.fullmatch(address[:colon]) else ""


def remote_host(address: str, own_host: str) -> str:
    """The host of an http(s) address elsewhere than ``own_host``; ``""`` for an address on
    this page's host (any port or scheme: the browser would send the viewer's cookie, or
    reach a neighbour), a relative address, or anything else."""
    try:
        parts = urlsplit(address)
        parts.port  # noqa: B018 (a malformed port raises here)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return ""
    if parts.hostname.lower() == own_host.lower():
        return ""
    return parts.netloc.rsplit("@", 1)[-1]


def render_markdown(text: str, *, own_host: str) -> str:
    """``text`` as HTML by the rules above; ``own_host`` is the page's host name."""
    env: EnvType = {"own_host": own_host, "highlight_budget": PAGE_HIGHLIGHT_BUDGET}
    return _MARKDOWN.render(clean_text(text), env)


# ── the parser and its rules ────────────────────────────────────────


def _math(latex: str, options: dict[str, Any]) -> str:
    display = bool(options.get("display_mode"))
    try:
        return latex_to_mathml(latex, display=display)
    except MathNotShown:
        shown = html.escape(latex.strip() if display else latex)
        return f'<code class="math-source">{shown}</code>'


def _inline_double_math(
    _renderer: RendererHTML, tokens: Sequence[Token], idx: int, _options: OptionsDict, _env: EnvType
) -> str:
    """``$$…$$`` inside a paragraph stays inline, as remark-math reads it (a ``<div>`` there
    would break the paragraph)."""
    return f'<span class="math inline">{_math(tokens[idx].content, {})}</span>'


def _links(state: StateCore) -> None:
    """Core rule: links keep a safe address only (else they become plain text)."""
    for block in state.tokens:
        emptied = False
        for token in block.children or ():
            if token.type == "link_open":
                href = safe_link(str(token.attrGet("href") or ""))
                emptied = not href
                token.attrs = {} if emptied else {"href": href, "rel": LINK_REL}
                token.tag = "span" if emptied else "a"
            elif token.type == "link_close":
                token.tag = "span" if emptied else "a"


class _PageRenderer(RendererHTML):
    """Images by the app's rule; fences coloured within the page's budget."""

    def image(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        address = str(token.attrGet("src") or "")
        alt = self.renderInlineAsText(token.children or [], options, env)
        if INLINE_IMAGE.match(address):
            return f'<img src="{html.escape(address)}" alt="{html.escape(alt)}">'
        label = f" “{html.escape(alt)}”" if alt else ""
        host = remote_host(address, str(env.get("own_host", "")))
        if not host:
            return f'<span class="image-not-shown">[image not shown{label}]</span>'
        return (
            f'<a class="remote-image" href="{html.escape(address)}" rel="{LINK_REL}" '
            f'target="_blank" referrerpolicy="no-referrer" title="{html.escape(address)}">'
            f"[image{label} from {html.escape(host)}: click to open]</a>"
        )

    def fence(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        language = html.unescape(token.info).strip().split(maxsplit=1)
        coloured = _coloured(token.content, language[0] if language else "", env)
        if coloured is None:
            return super().fence(tokens, idx, options, env)
        return f'<pre class="code"><code>{coloured}</code></pre>\n'


def _coloured(code: str, language: str, env: EnvType) -> str | None:
    budget = int(env.get("highlight_budget", 0))
    if not language or len(code) > MAX_HIGHLIGHT_CHARS or len(code) > budget:
        return None
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return None
    env["highlight_budget"] = budget - len(code)
    return str(highlight(code, lexer, _FORMATTER))


class _PageMarkdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        """Every address is parsed as written; ``_links`` and the image rule decide."""
        return True


def _parser() -> MarkdownIt:
    # maxNesting: quotes and lists keep their text to 40 levels (commonmark's preset stops at
    # 20 and drops what is deeper); each ``[`` scans link labels up to this depth, so its
    # cost grows with it (link_page.BRACKET_WEIGHT).
    md = _PageMarkdown(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "maxNesting": 40},
        renderer_cls=_PageRenderer,
    )
    md.enable(["table", "strikethrough"])  # the app's remark-gfm
    md.use(dollarmath_plugin, allow_labels=False, double_inline=True, renderer=_math)
    md.add_render_rule("math_inline_double", _inline_double_math)
    md.core.ruler.push("share_page_links", _links)
    return md


_MARKDOWN = _parser()
