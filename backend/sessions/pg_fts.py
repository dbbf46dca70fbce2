"""PostgreSQL full-text documents and queries that find what FTS5 finds.

PostgreSQL never parses the text: documents and queries are FTS5's own tokens
(:mod:`backend.sessions.fts_tokens`), handed over as ``tsvector`` / ``tsquery`` literals in
bound parameters (``%s::tsvector``, ``%s::tsquery``). A literal quotes every lexeme, so no
token can be read as an operator; the SQL text itself never holds user input.

**Queries** are the FTS5 queries of ``backend.sessions.search`` and ``backend.chats.text``,
word for word (the same query rule, :func:`~backend.sessions.search.query_words`, and the
storage text rule on each quoted phrase, as ``quote_phrase`` applies it):

* a phrase (messages): ``'a' <-> 'b'``, the query's tokens at consecutive positions;
* every term in any order (messages, ``backend.sessions.search_terms``): ``'a' & 'b'``;
* all terms, the last as a prefix (titles): ``'trip' & 'li':*``; a term of several tokens is a
  phrase (``foo.bar`` → ``'foo' <-> 'bar'``), the prefix on its last token;
* any term (shared memory): ``'a' | ('foo' <-> 'bar')``.

Every term of a text in several parts may lie in a different part: :func:`parts_query` says
how a store asks for "every term" over parts.

A word without tokens is left out (FTS5 ignores an empty phrase); no tokens at all is ``None``:
such a query finds nothing, on both engines.

**Documents** get past the limits of ``tsvector`` that FTS5 does not have:

* positions stop at 16,383 and a lexeme keeps at most 256 of them, so a long text is indexed
  in **parts** (:func:`document_parts`) of at most :data:`PART_TOKENS` tokens, none holding a
  lexeme more than 256 times, each starting :data:`OVERLAP_TOKENS` tokens before the previous
  one ended. The longest phrase a query can ask (:data:`MAX_PHRASE_TOKENS`) is never longer
  than the overlap + 1, so every occurrence lies whole inside some part: a text matches iff
  one of its parts does;
* a lexeme is at most 2,046 bytes and a ``tsvector`` at most 1 MB: a token longer than the
  longest query word (:data:`MAX_LEXEME_CHARS`, 256 characters) is stored as its first 256
  characters plus :data:`LONG_TOKEN_MARK`, a separator no query token holds. A query can never
  ask for such a token whole (FTS5 cannot either), and a prefix query still finds it; a part
  also ends before its lexemes pass :data:`PART_BYTES`.

Pure code: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from backend.sessions.fts_tokens import MESSAGES, TITLES, Tokenizer
from backend.sessions.search import MAX_QUERY_CHARS, query_words
from backend.sessions.search_terms import query_terms
from backend.storage import well_formed_text

MAX_LEXEME_CHARS = MAX_QUERY_CHARS
LONG_TOKEN_MARK = "\x01"
MAX_PHRASE_TOKENS = (MAX_QUERY_CHARS + 1) // 2
"""n tokens take at least 2n - 1 characters (a separator between two)."""
OVERLAP_TOKENS = MAX_PHRASE_TOKENS
PART_TOKENS = 8_000
MAX_LEXEME_POSITIONS = 256
PART_BYTES = 512 * 1024
"""Far below the 1 MB of a tsvector: 256 positions of the longest lexemes still fit."""
_ENTRY_BYTES = 8
"""Per distinct lexeme in a tsvector, beside its text (entry header and alignment)."""
_POSITION_BYTES = 2

RANK_EXPRESSION = "ts_rank({document}, {query}, 1)"
"""Higher is better; it orders the rank fixtures the tests pin as FTS5's bm25 does (bm25 is
lower-better: a rank column holds ``-ts_rank(...)``). Normalization 1 divides by
1 + log(document length), as bm25 weighs a hit in a short text above one in a long text.
It is not bm25: over 278 random corpora (3-10 texts, one-word queries) it gave bm25's whole
order in 216 and bm25's best hit in 235. The hits themselves are always the same."""


@dataclass(frozen=True)
class DocumentPart:
    """One row of a text's index: tokens ``start:end`` as a ``tsvector`` literal."""

    start: int
    end: int
    tsvector: str


def lexeme(token: str) -> str:
    """How ``token`` is stored and asked for (see the module docstring on long tokens)."""
    if len(token) <= MAX_LEXEME_CHARS:
        return token
    return token[:MAX_LEXEME_CHARS] + LONG_TOKEN_MARK


def _quote(lexeme_text: str) -> str:
    """A lexeme as ``tsvector`` / ``tsquery`` input: quoted, quotes and backslashes escaped."""
    return "'" + lexeme_text.replace("\\", "\\\\").replace("'", "''") + "'"


def document_parts(text: str, tokenizer: Tokenizer = MESSAGES) -> list[DocumentPart]:
    """The parts that index ``text`` (none for a text without tokens)."""
    lexemes = tokenizer.tokens(text)
    if any(len(token) > MAX_LEXEME_CHARS for token in lexemes):
        lexemes = [lexeme(token) for token in lexemes]
    if len(lexemes) <= MAX_LEXEME_POSITIONS:  # within every limit of a part
        return [DocumentPart(0, len(lexemes), tsvector_literal(lexemes))] if lexemes else []
    parts: list[DocumentPart] = []
    start = 0
    while start < len(lexemes):
        end = _part_end(lexemes, start)
        parts.append(DocumentPart(start, end, tsvector_literal(lexemes[start:end])))
        if end == len(lexemes):
            break
        start = end - OVERLAP_TOKENS
    return parts


def _part_end(lexemes: Sequence[str], start: int) -> int:
    counts: dict[str, int] = {}
    size = 0
    end = start
    limit = min(len(lexemes), start + PART_TOKENS)
    while end < limit:
        item = lexemes[end]
        seen = counts.get(item, 0)
        if seen == MAX_LEXEME_POSITIONS:
            break
        grows = _POSITION_BYTES if seen else _ENTRY_BYTES + _POSITION_BYTES + len(item) * 4
        if size + grows > PART_BYTES:
            break
        counts[item] = seen + 1
        size += grows
        end += 1
    # Every part but the last holds >= 256 tokens (the lexeme cap is met first), so > overlap.
    assert end == len(lexemes) or end - start > OVERLAP_TOKENS
    return end


def tsvector_literal(lexemes: Sequence[str]) -> str:
    """``lexemes`` at positions 1, 2, ... as ``tsvector`` input."""
    positions: dict[str, list[int]] = {}
    for position, item in enumerate(lexemes, start=1):
        found = positions.get(item)
        if found is None:
            positions[item] = [position]
        else:
            found.append(position)
    # FTS5 tokens never hold a quote or a backslash (both separators): quote without escaping
    # unless one does.
    plain = not any("'" in item or "\\" in item for item in positions)
    return " ".join(
        [
            f"'{item}':{','.join(map(str, found))}"
            if plain
            else f"{_quote(item)}:{','.join(map(str, found))}"
            for item, found in positions.items()
        ]
    )


# ── queries ─────────────────────────────────────────────────────────


def _phrase(tokens: Sequence[str], *, prefix: bool = False) -> str:
    terms = [_quote(lexeme(token)) for token in tokens]
    if prefix:
        terms[-1] += ":*"
    joined = " <-> ".join(terms)
    return f"( {joined} )" if len(terms) > 1 else joined


def phrase_tsquery(query: object, tokenizer: Tokenizer = MESSAGES) -> str | None:
    """``backend.sessions.search.phrase_query`` as a ``tsquery`` literal."""
    words = query_words(query) if isinstance(query, str) else []
    tokens = tokenizer.tokens(well_formed_text(" ".join(words)))
    return _phrase(tokens) if tokens else None


_MATCH_PHRASE = re.compile(r'"((?:[^"]|"")*)"(\*?)')


def match_tsquery(match: str, tokenizer: Tokenizer = MESSAGES) -> str | None:
    """The ``tsquery`` of an FTS5 query this project built, read back exactly.

    Stores receive the FTS5 query their callers built (``phrase_query``, ``prefix_query``,
    ``any_terms_query``, the tiers of ``backend.sessions.search_terms``): quoted phrases
    (inner quotes doubled), a ``*`` after a prefix, joined all by spaces (every phrase) or all
    by `` OR `` (any phrase). FTS5 tokenizes each phrase's text, so its tokens are read the
    same way here; anything else is a ``ValueError``.
    """
    phrases, any_of = _parse_match(match, tokenizer)
    return (" | " if any_of else " & ").join(phrases) or None


def _parse_match(match: str, tokenizer: Tokenizer) -> tuple[list[str], bool]:
    """``(the phrases as tsquery, whether they are joined by OR)`` of a built FTS5 query."""
    phrases: list[str] = []
    joins: set[str] = set()
    at = 0
    while True:
        found = _MATCH_PHRASE.match(match, at)
        if found is None:
            raise ValueError("not an FTS5 query of quoted phrases")
        tokens = tokenizer.tokens(found[1].replace('""', '"'))
        if tokens:
            phrases.append(_phrase(tokens, prefix=bool(found[2])))
        at = found.end()
        if at == len(match):
            break
        join = " OR " if match.startswith(" OR ", at) else " " if match[at] == " " else ""
        if not join:
            raise ValueError("not an FTS5 query of quoted phrases")
        joins.add(join)
        at += len(join)
    if len(joins) > 1:
        raise ValueError("an FTS5 query mixing AND and OR is not one this project builds")
    return phrases, joins == {" OR "}


def _term_tokens(query: object, tokenizer: Tokenizer, *, distinct: bool) -> list[list[str]]:
    """The tokens of each term of ``query`` (terms without tokens left out)."""
    found = [
        tokenizer.tokens(well_formed_text(" ".join(term)))
        for term in query_terms(query, distinct=distinct)
    ]
    return [tokens for tokens in found if tokens]


def prefix_tsquery(query: object, tokenizer: Tokenizer = TITLES) -> str | None:
    """``backend.chats.text.prefix_query`` as a ``tsquery`` literal."""
    terms = _term_tokens(query, tokenizer, distinct=True)
    last = len(terms) - 1
    phrases = [_phrase(tokens, prefix=index == last) for index, tokens in enumerate(terms)]
    return " & ".join(phrases) if phrases else None


def any_terms_tsquery(query: object, tokenizer: Tokenizer = MESSAGES) -> str | None:
    """``backend.chats.text.any_terms_query`` as a ``tsquery`` literal."""
    phrases = [_phrase(tokens) for tokens in _term_tokens(query, tokenizer, distinct=True)]
    return " | ".join(phrases) if phrases else None


def all_terms_tsquery(query: object, tokenizer: Tokenizer = MESSAGES) -> str | None:
    """``all_terms(query_terms(query))`` (every term, any order) as a ``tsquery`` literal."""
    phrases = [_phrase(tokens) for tokens in _term_tokens(query, tokenizer, distinct=False)]
    return " & ".join(phrases) if phrases else None


# ── a query over a text's parts ─────────────────────────────────────


@dataclass(frozen=True)
class PartsQuery:
    """How a store asks for the texts matching an FTS5 query when texts are in parts.

    A phrase lies whole in some part (the overlap rule), but the terms of "every term" may
    lie in different parts of a long text. So a part is a candidate when it matches
    :attr:`candidates` (the query itself, or any of its terms), and a text matches when each
    of :attr:`every` (empty: no further condition) matches one of its parts. Ranks use
    :attr:`candidates`.
    """

    candidates: str
    every: tuple[str, ...]

    def having(self, tsv: str) -> str:
        """The SQL condition on a text's group of parts (``?`` per term of :attr:`every`)."""
        if not self.every:
            return ""
        return "HAVING " + " AND ".join(f"bool_or({tsv} @@ ?::tsquery)" for _ in self.every)


def parts_query(match: str, tokenizer: Tokenizer = MESSAGES) -> PartsQuery | None:
    """The :class:`PartsQuery` of an FTS5 query this project built (``None``: finds nothing)."""
    phrases, any_of = _parse_match(match, tokenizer)
    if not phrases:
        return None
    if len(phrases) == 1 or any_of:
        return PartsQuery(" | ".join(phrases), ())
    return PartsQuery(" | ".join(phrases), tuple(phrases))
