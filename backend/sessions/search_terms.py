"""Words in any order: a query's terms, the FTS5 queries they make, and exact phrases first.

A query of several words finds what holds all of them, in any order; the texts holding them
as one exact run of words rank first. A run of words in double quotes is one **term** that
must appear as that phrase; every other word is a term of its own. So ``sourdough rye`` finds
"my sourdough starter with rye flour", while ``"sourdough rye"`` finds only the exact run.

The terms come from the words of the query rule (:func:`~backend.sessions.search.query_words`:
the same bounds on words and characters), split at their double quotes: a quote opens or
closes a phrase wherever it stands, an unclosed quote runs to the end of the query. Each term
reaches FTS5 only as a quoted phrase (:func:`~backend.sessions.search.quote_phrase`), so the
quotes a person types choose phrases and nothing else; operators stay words.

Searches run in **tiers**, most exact first (:func:`exact_first`): the whole query as one
phrase, then every term in any order (then, for memory recall, any term). A hit keeps the
place of the first tier that found it. Pure code: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from backend.sessions.search import query_words, quote_phrase
from backend.storage import MAX_INTEGER

Term = tuple[str, ...]
"""The words of one term: one word, or the words of a quoted phrase."""
Hit = TypeVar("Hit")


def query_terms(query: object, *, distinct: bool = False) -> list[Term]:
    """The query's terms, in input order (see the module docstring); ``[]`` without words.

    With ``distinct``, a term repeated (case-insensitively) is kept once, as searches whose
    terms are a set (titles, memory) want.
    """
    if not isinstance(query, str):
        return []
    terms: list[Term] = []
    phrase: list[str] = []
    quoted = False
    for word in query_words(query, distinct=distinct):
        pieces = word.split('"')
        for index, piece in enumerate(pieces):
            if index:  # a quote stands before this piece: a phrase opens or closes
                if quoted and phrase:
                    terms.append(tuple(phrase))
                phrase = []
                quoted = not quoted
            if not any(ch.isalnum() for ch in piece):
                continue
            if quoted:
                phrase.append(piece)
            else:
                terms.append((piece,))
    if quoted and phrase:
        terms.append(tuple(phrase))
    if distinct:
        seen: set[str] = set()
        kept: list[Term] = []
        for term in terms:
            key = " ".join(term).casefold()
            if key not in seen:
                seen.add(key)
                kept.append(term)
        terms = kept
    return terms


def _phrase(term: Term) -> str:
    return quote_phrase(" ".join(term))


def exact_phrase(terms: Sequence[Term], *, prefix: bool = False) -> str | None:
    """Every word of ``terms`` as one FTS5 phrase (the last word a prefix if ``prefix``)."""
    if not terms:
        return None
    return _phrase(tuple(word for term in terms for word in term)) + ("*" if prefix else "")


def all_terms(terms: Sequence[Term], *, prefix: bool = False) -> str | None:
    """Every term, in any order (FTS5's implicit AND); the last one a prefix if ``prefix``."""
    if not terms:
        return None
    quoted = [_phrase(term) for term in terms]
    if prefix:
        quoted[-1] += "*"
    return " ".join(quoted)


def any_term(terms: Sequence[Term]) -> str | None:
    """Any term (FTS5's ``OR``); bm25 ranks texts holding more of them first."""
    return " OR ".join(_phrase(term) for term in terms) if terms else None


def words_tiers(query: object) -> list[str]:
    """Message search: the exact phrase first, then every term in any order."""
    terms = query_terms(query)
    if not terms:
        return []
    words = all_terms(terms)
    assert words is not None
    if len(terms) == 1:
        return [words]
    phrase = exact_phrase(terms)
    assert phrase is not None
    return [phrase, words]


def title_tiers(query: object) -> list[str]:
    """Title search as you type: the exact phrase first, then every term in any order, the
    last word a prefix in both."""
    terms = query_terms(query, distinct=True)
    if not terms:
        return []
    words = all_terms(terms, prefix=True)
    assert words is not None
    if len(terms) == 1:
        return [words]
    phrase = exact_phrase(terms, prefix=True)
    assert phrase is not None
    return [phrase, words]


def recall_tiers(query: object) -> list[str]:
    """Memory recall: the exact phrase, then every term, then any term."""
    terms = query_terms(query, distinct=True)
    if not terms:
        return []
    anywhere = any_term(terms)
    assert anywhere is not None
    if len(terms) == 1:
        return [anywhere]
    phrase, words = exact_phrase(terms), all_terms(terms)
    assert phrase is not None and words is not None
    return [phrase, words, anywhere]


def exact_first(
    tiers: Sequence[str],
    search: Callable[[str, int], Sequence[Hit]],
    key: Callable[[Hit], Hashable],
    limit: int,
) -> list[Hit]:
    """At most ``limit`` hits: each tier's own order, the hits of earlier tiers first.

    ``search(match, n)`` returns a tier's best ``n`` hits. A later tier is asked for as many
    more as the earlier tiers found, so the hits it repeats never leave the page short.
    """
    found: list[Hit] = []
    seen: set[Hashable] = set()
    for match in tiers:
        if len(found) >= limit:
            break
        for hit in search(match, min(limit + len(found), MAX_INTEGER)):
            identity = key(hit)
            if identity not in seen:
                seen.add(identity)
                found.append(hit)
    return found[:limit]
