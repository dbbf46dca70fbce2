"""The one place markdown is rendered: raw HTML off, remote images never fetched on their own."""

from __future__ import annotations

import reflex as rx


class MarkdownImage(rx.Component):
    """``<img>`` of rendered markdown: inline for this origin, ``data:`` and ``blob:``, else a link.

    The React side (``markdown_image.jsx``, beside this file) decides per address in the browser,
    where the page's own origin is known.
    """

    library = rx.asset("markdown_image.jsx", shared=True).importable_path
    tag = "MarkdownImage"


def _image(*_children: object, **props: object) -> rx.Component:
    # react-markdown hands the element's props (src, alt, title) to the component; an <img>
    # has no children.
    return MarkdownImage.create(**props)


def safe_markdown(text: rx.Var | str, **props: object) -> rx.Component:
    """Markdown with raw HTML switched off and images through :class:`MarkdownImage`.

    Reflex's markdown enables rehype-raw by default, which would render HTML from a message
    (``<script>``, ``onerror=``); off, such HTML stays text.
    """
    return rx.markdown(text, use_raw=False, component_map={"img": _image}, **props)
