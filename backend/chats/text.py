"""Pure text rules of the directory: titles, previews, FTS5 queries, snippets.

No I/O here. Every string a user types reaches SQLite's ``MATCH`` only through the query
builders of this module and of ``backend.sessions.search_terms``, so no user input is ever
parsed as FTS5 syntax (no ``OR``, ``NEAR``, column filters or stray quotes from a search box),
and every query obeys the query rule of ``backend.sessions.search`` (at most
``MAX_QUERY_WORDS`` words): a query's words match in any order, a quoted run of words as a
phrase, the exact phrase ranked first (``search_terms``).

Snippet markers: highlighted terms are wrapped in :data:`SNIPPET_START` / :data:`SNIPPET_END`,
two Unicode private-use characters (U+E000, U+E001) that no keyboard produces and no markup
language gives a meaning to. A UI splits on them (:func:`split_snippet`) and renders the
pieces as text, never as HTML, so message content cannot inject markup through a snippet.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from backend.errors import InvalidInputError
from backend.sessions.search import phrase_query as phrase_query  # one rule for both paths
from backend.sessions.search_terms import all_terms, any_term, query_terms
from backend.storage import well_formed_text

SNIPPET_START = "\ue000"
SNIPPET_END = "\ue001"
SNIPPET_ELLIPSIS = "…"
SNIPPET_TOKENS = 12
MAX_TITLE_CHARS = 200
MAX_PREVIEW_CHARS = 120
DEFAULT_TITLE_PREFIX = "Chat — "
PLACEHOLDER_TITLE = "New chat"  # when a title is made from a message that offers none

_WHITESPACE = re.compile(r"\s+")


# ── titles and previews ─────────────────────────────────────────────


def default_title(now_ms: int) -> str:
    """The RFC's default: ``Chat — YYYY-MM-DD`` (UTC), no model call, no side effects."""
    day = datetime.fromtimestamp(now_ms / 1000, tz=UTC).date().isoformat()
    return f"{DEFAULT_TITLE_PREFIX}{day}"


def is_default_title(title: str) -> bool:
    """Whether ``title`` is one the app gave, never one a person chose: blank, the dated
    default, or the placeholder. Only such a chat is titled after its first reply."""
    return not title.strip() or title.startswith(DEFAULT_TITLE_PREFIX) or title == PLACEHOLDER_TITLE


def clean_title(title: object) -> str:
    """Trim a title; a blank or oversized title is rejected (writes raise, never truncate).

    Lone surrogates become U+FFFD here (the storage text rule), before any store, event or
    length check sees the title.
    """
    if not isinstance(title, str):
        raise TypeError(f"chat title must be a string, not {type(title).__name__}")
    cleaned = _WHITESPACE.sub(" ", well_formed_text(title)).strip()
    if not cleaned:
        raise InvalidInputError("chat title must not be blank")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise InvalidInputError(
            f"chat title is {len(cleaned)} characters; the limit is {MAX_TITLE_CHARS}"
        )
    return cleaned


def clean_preview(preview: object) -> str:
    """Collapse whitespace and keep the first :data:`MAX_PREVIEW_CHARS` code points.

    The preview is broadcast to every tab (RFC edge case 20), so it is kept short: it is a
    sidebar hint, not a copy of the conversation. The storage text rule applies first, so the
    cut never falls between the two halves of a pair.
    """
    if not isinstance(preview, str):
        raise TypeError(f"chat preview must be a string, not {type(preview).__name__}")
    cleaned = _WHITESPACE.sub(" ", well_formed_text(preview)).strip()
    if len(cleaned) > MAX_PREVIEW_CHARS:
        cleaned = cleaned[: MAX_PREVIEW_CHARS - 1].rstrip() + SNIPPET_ELLIPSIS
    return cleaned


# ── FTS5 queries ────────────────────────────────────────────────────


def prefix_query(query: str) -> str | None:
    """Every term must match, in any order, the last one as a prefix (search-as-you-type
    over titles); a quoted run of words is one phrase term.

    The terms are the query rule's distinct terms (``backend.sessions.search_terms``).
    """
    return all_terms(query_terms(query, distinct=True), prefix=True)


def any_terms_query(query: str) -> str | None:
    """Any term may match; bm25 ranks entries holding more of them first (memory recall)."""
    return any_term(query_terms(query, distinct=True))


# ── snippets ────────────────────────────────────────────────────────


def split_snippet(snippet: str) -> list[tuple[str, bool]]:
    """Split a highlighted snippet into ``(text, is_hit)`` pieces for safe rendering."""
    pieces: list[tuple[str, bool]] = []
    rest = snippet
    while rest:
        head, found, tail = rest.partition(SNIPPET_START)
        if head:
            pieces.append((head, False))
        if not found:
            break
        hit, _, rest = tail.partition(SNIPPET_END)
        if hit:
            pieces.append((hit, True))
    return pieces
