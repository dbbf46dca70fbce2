"""The Porter stemmer as SQLite's FTS5 ``porter`` tokenizer applies it, token by token.

The original algorithm (M. F. Porter, 1980) with the two changes its author's reference
implementation made and FTS5 keeps (``bli`` → ``ble`` and ``logi`` → ``log`` in step 2), applied
the way FTS5 applies it:

* on the token's **UTF-8 bytes**: a byte outside ``a e i o u y`` is a consonant, so a letter
  outside ASCII counts as one or more consonants; ``y`` is a vowel after a consonant, except
  in step 1b's double-consonant test, which counts it as a consonant;
* only to tokens of 3 to 64 bytes; shorter and longer tokens pass unchanged.

Every step takes the first rule whose suffix matches and stops there, whether or not its
condition on the stem holds; a suffix matches only a longer word.
``tests/sessions/test_fts_tokens.py`` compares it with FTS5 itself.

Pure code: no I/O.
"""

from __future__ import annotations

MIN_BYTES = 3
MAX_BYTES = 64

_VOWELS = frozenset("aeiou")

# (suffix, replacement) per step, in the order they are tried.
_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _ends(word: str, suffix: str | tuple[str, ...]) -> bool:
    """FTS5 matches a suffix only when something stays before it (``ies`` is not ``i``)."""
    if isinstance(suffix, tuple):
        return any(_ends(word, one) for one in suffix)
    return len(word) > len(suffix) and word.endswith(suffix)


def _consonant(word: str, at: int) -> bool:
    letter = word[at]
    if letter in _VOWELS:
        return False
    if letter == "y":
        return at == 0 or not _consonant(word, at - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    count = 0
    seen_vowel = False
    for at in range(len(stem)):
        if _consonant(stem, at):
            if seen_vowel:
                count += 1
                seen_vowel = False
        else:
            seen_vowel = True
    return count


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, at) for at in range(len(stem)))


def _double_consonant(stem: str) -> bool:
    """Porter's *d as FTS5 tests it: two equal last letters, neither a e i o u (``y`` counts)."""
    return len(stem) >= 2 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS


def _cvc(stem: str) -> bool:
    """Porter's *o: consonant, vowel, consonant at the end, the last not w, x or y."""
    end = len(stem)
    return (
        end >= 3
        and _consonant(stem, end - 1)
        and not _consonant(stem, end - 2)
        and _consonant(stem, end - 3)
        and stem[-1] not in "wxy"
    )


def _step1(word: str) -> str:
    if _ends(word, "sses") or _ends(word, "ies"):
        word = word[:-2]
    elif _ends(word, "s") and not _ends(word, "ss"):
        word = word[:-1]
    if _ends(word, "eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if _ends(word, suffix) and _has_vowel(word[: -len(suffix)]):
                word = _after_1b(word[: -len(suffix)])
                break
    if _ends(word, "y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _after_1b(stem: str) -> str:
    if _ends(stem, ("at", "bl", "iz")):
        return stem + "e"
    if _double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _cvc(stem):
        return stem + "e"
    return stem


def _replace(word: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, replacement in rules:
        if _ends(word, suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > 0 else word
    return word


def _step4(word: str) -> str:
    for suffix in _STEP4:
        if _ends(word, suffix):
            stem = word[: -len(suffix)]
            if suffix == "ion" and not _ends(stem, ("s", "t")):
                continue
            return stem if _measure(stem) > 1 else word
    return word


def _step5(word: str) -> str:
    if _ends(word, "e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _cvc(stem)):
            word = stem
    if _ends(word, "ll") and _measure(word) > 1:
        word = word[:-1]
    return word


def stem(token: str) -> str:
    """``token`` (already folded by ``unicode61``) as FTS5's ``porter`` emits it."""
    raw = token.encode("utf-8")
    if not MIN_BYTES <= len(raw) <= MAX_BYTES:
        return token
    word = raw.decode("latin-1")  # one character per byte: the rules see bytes
    word = _step5(_step4(_replace(_replace(_step1(word), _STEP2), _STEP3)))
    return word.encode("latin-1").decode("utf-8")
