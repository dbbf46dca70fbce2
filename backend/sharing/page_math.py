"""Math on a share link's page: LaTeX turned into MathML on the server, through an allow-list.

The app renders ``$…$`` and ``$$…$$`` with KaTeX in the browser; the link page runs no script
at all, so it sends MathML, which browsers lay out natively. ``latex2mathml`` builds an
element tree from the LaTeX, but it copies what the source says into that tree: ``\\text{<b>}``
becomes raw text, ``\\href{javascript:…}`` an ``href`` attribute, ``\\style{…}`` a ``style``.
So its string output is never used: this module walks the tree and writes only MathML
elements and presentation attributes it knows, every text and value escaped. Anything the
converter cannot read (an unknown construct, nesting deep enough to exhaust the stack) shows
as its source, as the app's KaTeX shows an error.
"""

from __future__ import annotations

import html
import re
from xml.etree.ElementTree import Element

from latex2mathml.converter import convert_to_element

MAX_LATEX_CHARS = 10_000
"""Longer formulas show as source: a formula is a line or a few, and the conversion's cost
grows with it."""

MATHML_ELEMENTS = frozenset(
    {
        "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup",
        "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
        "mstyle", "mpadded", "mphantom", "menclose", "merror", "mmultiscripts", "mprescripts",
        "none", "semantics", "annotation",
    }
)  # fmt: skip
MATHML_ATTRIBUTES = frozenset(
    {
        "display", "mathvariant", "displaystyle", "scriptlevel", "stretchy", "fence",
        "separator", "lspace", "rspace", "minsize", "maxsize", "largeop", "movablelimits",
        "accent", "accentunder", "linethickness", "columnalign", "rowalign", "columnspacing",
        "rowspacing", "columnlines", "rowlines", "frame", "width", "height", "depth",
        "voffset", "notation", "mathcolor", "mathbackground", "mathsize", "form", "symmetric",
        "columnspan", "rowspan", "open", "close", "separators", "align", "bevelled",
    }
)  # fmt: skip
_PLAIN_VALUE = re.compile(r"[\w .,:%#+\-]{0,64}")
"""What an attribute's value may be: lengths, colours, keywords; never a URL or markup."""
_CHARACTER_REFERENCE = re.compile(r"&#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}));")
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"


class MathNotShown(ValueError):
    """The formula could not be turned into MathML: the page shows its source."""


def latex_to_mathml(latex: str, *, display: bool) -> str:
    """``latex`` as a ``<math>`` element holding only allowed elements and attributes;
    :class:`MathNotShown` when it cannot be converted."""
    if len(latex) > MAX_LATEX_CHARS:
        raise MathNotShown("formula too long")
    try:
        tree = convert_to_element(latex, display="block" if display else "inline")
        parts: list[str] = []
        _write(tree, parts)
    except RecursionError as exc:
        raise MathNotShown("formula nested too deeply") from exc
    except Exception as exc:  # the converter's own refusals have no common type
        raise MathNotShown(f"formula not understood: {type(exc).__name__}") from exc
    return "".join(parts)


def _write(element: Element, out: list[str]) -> None:
    """Append ``element`` as allowed MathML; an unknown element keeps only its text and
    children (as an ``mrow``), so nothing it says becomes markup."""
    tag = element.tag if element.tag in MATHML_ELEMENTS else "mrow"
    attributes = "".join(
        f' {name}="{html.escape(value)}"'
        for name, value in sorted(element.attrib.items())
        if name in MATHML_ATTRIBUTES and _PLAIN_VALUE.fullmatch(value)
    )
    if tag == "math":
        attributes = f' xmlns="{MATHML_NAMESPACE}"' + attributes
    out.append(f"<{tag}{attributes}>")
    if element.text:
        out.append(_text(element.text))
    for child in element:
        _write(child, out)
        if child.tail:
            out.append(_text(child.tail))
    out.append(f"</{tag}>")


def _text(raw: str) -> str:
    # The converter keeps some symbols as numeric character references (``&#x0221E;``) in
    # the text; anything else in it is the formula's own text, escaped as written.
    return html.escape(_CHARACTER_REFERENCE.sub(_referenced, raw), quote=False)


def _referenced(found: re.Match[str]) -> str:
    code = int(found[1], 16) if found[1] else int(found[2])
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
