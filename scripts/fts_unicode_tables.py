"""Regenerate backend/sessions/fts_unicode.py by asking SQLite's FTS5 how it reads each code point.

FTS5's ``unicode61`` tokenizer carries its own Unicode tables (an older Unicode than Python's,
where unassigned code points are token characters), so the Python twin cannot derive them from
``unicodedata``: this script measures them. Every code point ``c`` (surrogates excepted) is
tokenized inside ``a{c}b`` with ``remove_diacritics`` 0, 1 and 2; one token means ``c`` is a
token character (and the token's middle is its folded form), two tokens mean a separator.

Usage: python scripts/fts_unicode_tables.py > backend/sessions/fts_unicode.py
"""

from __future__ import annotations

import sqlite3
import sys

_CHUNK = 50_000


def measure(remove_diacritics: int) -> dict[int, str | None]:
    """``{code point: folded form}``, ``None`` for a separator."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x, "
        f"tokenize = 'unicode61 remove_diacritics {remove_diacritics}')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    found: dict[int, str | None] = {}
    for start in range(0, len(points), _CHUNK):
        chunk = points[start : start + _CHUNK]
        db.execute("DELETE FROM t")
        db.execute(
            "INSERT INTO t (rowid, x) VALUES (1, ?)", (" ".join(f"a{chr(c)}b" for c in chunk),)
        )
        terms = [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]
        at = 0
        for c in chunk:
            if terms[at] == "a" and terms[at + 1 : at + 2] == ["b"]:
                found[c] = None
                at += 2
            else:
                assert terms[at][0] == "a" and terms[at][-1] == "b", (hex(c), terms[at])
                found[c] = terms[at][1:-1]
                at += 1
        assert at == len(terms)
    db.close()
    return found


def continuations(found: dict[int, str | None]) -> list[int]:
    """Token characters that cannot start a token (FTS5's diacritics): ``" {c}b"`` reads ``b``."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 0')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    points = [c for c, folded in found.items() if folded is not None]
    late: list[int] = []
    for start in range(0, len(points), _CHUNK):
        chunk = points[start : start + _CHUNK]
        db.execute("DELETE FROM t")
        db.execute(
            "INSERT INTO t (rowid, x) VALUES (1, ?)", (" ".join(f"{chr(c)}b" for c in chunk),)
        )
        terms = [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]
        late += [c for c, term in zip(chunk, terms, strict=True) if term == "b"]
    db.close()
    return late


def ranges(points: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(points):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def fold_runs(mapping: dict[int, str]) -> list[tuple[int, int, int, int]]:
    """``(first, last, step, delta)``: every ``first + k*step <= last`` maps to itself + delta;
    delta ``None`` is written as the dropped marker -1 with an empty result."""
    runs: list[tuple[int, int, int, int]] = []
    for c in sorted(mapping):
        target = mapping[c]
        delta = ord(target) - c if target else DROP
        if runs:
            first, last, step, run_delta = runs[-1]
            gap = c - last
            if run_delta == delta and ((first == last and gap in (1, 2)) or gap == step):
                runs[-1] = (first, c, gap, delta)
                continue
        runs.append((c, c, 1, delta))
    return runs


DROP = 0x110000
"""Delta marking a code point folded away (a combining mark under ``remove_diacritics``)."""


_HEADER = '''"""FTS5 ``unicode61`` tables, measured from SQLite {version} by
scripts/fts_unicode_tables.py (do not edit by hand; rerun the script).

``SEPARATORS``: inclusive ranges ``first:last`` (hex) of the code points that end a token;
every other code point, surrogates aside, is a token character. ``CONTINUATIONS``: ranges of
token characters that cannot start a token (combining diacritics). ``FOLDS[0]``: runs
``first:last:step:delta`` (hex) of the code points folded with ``remove_diacritics 0``:
``first, first + step, ... <= last`` each become ``chr(c + delta)``, or nothing when delta is
``DROP``; ``FOLDS[1]`` and ``FOLDS[2]`` hold only the code points whose fold
``remove_diacritics`` 1 or 2 changes. :mod:`backend.sessions.fts_tokens` reads them.
"""

'''


def main() -> None:
    tables = {level: measure(level) for level in (0, 1, 2)}
    base = tables[0]
    separators = [c for c, v in base.items() if v is None]
    for level in (1, 2):
        assert [c for c, v in tables[level].items() if v is None] == separators
    folds = {0: {c: v for c, v in base.items() if v is not None and v != chr(c)}}
    for level in (1, 2):  # only where removing diacritics changes the fold of level 0
        folds[level] = {
            c: v for c, v in tables[level].items() if v is not None and v != (base[c] or "")
        }
    w = sys.stdout.write
    w(_HEADER.format(version=sqlite3.sqlite_version))
    w(f'SQLITE_VERSION = "{sqlite3.sqlite_version}"\n')
    w(f"DROP = {DROP:#x}\n\n")
    w("CONTINUATIONS = (\n")
    _lines(w, [f"{first:x}:{last:x}" for first, last in ranges(continuations(base))], "    ")
    w(")\n\n")
    w("SEPARATORS = (\n")
    _lines(w, [f"{first:x}:{last:x}" for first, last in ranges(separators)], "    ")
    w(")\n\n")
    w("FOLDS = {\n")
    for level in (0, 1, 2):
        w(f"    {level}: (\n")
        runs = fold_runs(folds[level])
        _lines(w, [f"{a:x}:{b:x}:{step:x}:{delta:x}" for a, b, step, delta in runs], "        ")
        w("    ),\n")
    w("}\n")


def _lines(w: object, items: list[str], indent: str) -> None:
    """``items`` as adjacent string literals of at most 100 characters a line."""
    line = ""
    for item in items:
        if line and len(indent) + len(line) + len(item) + 3 > 99:
            w(f'{indent}"{line} "\n')  # type: ignore[operator]
            line = ""
        line += (" " if line else "") + item
    w(f'{indent}"{line}"\n')  # type: ignore[operator]


if __name__ == "__main__":
    main()
