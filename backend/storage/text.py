"""The one rule for text bound into TEXT columns and search indexes, on both engines.

SQLite stores text as UTF-8, and UTF-8 has no encoding for a UTF-16 surrogate code point
(U+D800..U+DFFF). Python strings can hold them anyway: a JSON ``"\\ud83d"`` escape, a model
stream cut between the two halves of an emoji, a user's paste. ``sqlite3`` refuses to bind such
a string (``UnicodeEncodeError``), so one stray code unit used to fail a whole write: the chat's
search index, its sidebar preview, a run's final commit.

**The rule** (:func:`well_formed_text`):

* a high surrogate (U+D800..U+DBFF) directly followed by a low one (U+DC00..U+DFFF) is a pair
  written as two code units: it becomes the one code point it encodes (``"\\ud83d\\ude00"`` →
  ``"😀"``);
* every other surrogate is *lone* and becomes U+FFFD REPLACEMENT CHARACTER, one per code unit;
* U+0000 (NUL) becomes U+FFFD too: PostgreSQL's ``text`` refuses it ("text fields cannot
  contain NUL bytes"), so a title, a memory or a search document holding one would store on
  SQLite and fail on PostgreSQL. Mapped the same way on both engines, the same input reads
  back the same wherever it is stored;
* everything else is unchanged: well-formed text comes back as the very same object, and the
  result always encodes as UTF-8 and binds on both engines. The rule is idempotent.

**Where it applies:** text that is stored to be read or searched as text: FTS documents and
queries (``backend.sessions.search``, ``backend.chats.text`` quoting), chat titles and previews
(``backend.chats.text.clean_title`` / ``clean_preview``, which every title and preview passes
through before any store, event or truncation sees it), shared memory labels and contents
(``backend.chats.shared``), compaction summaries (``backend.sessions.handle``), the runtime's
conversation titles and run errors (``backend.runtime.store``). The same rule serves the other
places text leaves Python as UTF-8: the model request body (``backend.models.openai_wire``)
and the live run events (:func:`live_text`).

**Where it does not:** a stored message's JSON stays exact: ``dump_json`` escapes surrogates
(``\\ud800``), so the JSON reads back as the same string. Ids and keys are refused with a clear
error (``check_storable_text``) rather than merged: two distinct lone surrogates would otherwise
name the same row.

**Why not in ``Database._run``** (every bound string of every statement): it would scan every
parameter of every statement (about 0.4 µs for the durable append's INSERT, and a second UTF-8
encode of the whole message JSON when it is not ASCII, which ``dump_json`` already did),
silently merge distinct keys, and could not join a pair split across two stream chunks, which
are separate strings until the reply is assembled (:func:`join_text`). ``_run`` only reports a
string that slipped through as an ``InvalidInputError`` (no cost until it happens).
"""

from __future__ import annotations

from collections.abc import Iterable

_HIGH_SURROGATES = range(0xD800, 0xDC00)
REPLACEMENT = "\ufffd"


def well_formed_text(text: str) -> str:
    """``text`` made storable by the rule above (the same object when it already is)."""
    if "\x00" in text:  # a C-speed scan; no NUL is the rule, not the exception
        text = text.replace("\x00", REPLACEMENT)
    return _recode(text, lone="replace")


def join_text(pieces: Iterable[str]) -> str:
    """Concatenate streamed ``pieces``, joining surrogate pairs split between them.

    Lone surrogates are kept (a stored message's JSON is exact; only its indexed copy is made
    well-formed), so a model's output is stored as it was emitted.
    """
    return _recode("".join(pieces), lone="surrogatepass")


def _recode(text: str, *, lone: str) -> str:
    """Join pairs spelled as two code units; ``lone`` is the codec error handler for the rest."""
    if text.isascii():  # O(1) in CPython: most text takes this exit
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 with surrogatepass writes each code point as its code units, so a pair written
        # as two code points decodes as the code point it encodes; "replace" turns each unit
        # that pairs with nothing into U+FFFD, "surrogatepass" keeps it.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", lone)
    return text


def live_text(held: str, delta: str) -> tuple[str, str]:
    """Split a streamed delta into ``(well-formed text to show now, code unit held back)``.

    A delta ending in a high surrogate may be half of a pair whose other half is the next
    delta's first code unit: that unit is held and prefixed to the next delta (``held``) so
    the pair is shown whole. Anything else ill-formed is shown as U+FFFD, as stored text is.
    """
    text = held + delta if held else delta
    if text and ord(text[-1]) in _HIGH_SURROGATES:
        return well_formed_text(text[:-1]), text[-1]
    return well_formed_text(text), ""
