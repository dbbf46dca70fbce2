"""The one place markdown is rendered: raw HTML off, remote images never fetched on their own.

Math and code come from plugins that build their output from the markdown tree, never from
HTML in the text: ``remark-math`` + ``rehype-katex`` turn ``$…$`` and ``$$…$$`` into KaTeX
markup (its stylesheet is imported from the ``katex`` npm package, so nothing is fetched from
another host), and fenced code blocks go through Prism (react-syntax-highlighter), which colours
tokens by language and renders them as text.
"""

from __future__ import annotations

import reflex as rx

from chatsapp.components.copy_button import CopyButton


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


def _code_block(code: rx.Var | str, **props: object) -> rx.Component:
    """A fenced block: highlighted by its language, with its own copy button."""
    return rx.box(
        rx.code_block(code, margin_y="1em", wrap_long_lines=True, **props),
        rx.box(
            CopyButton.create(text=code, label="Copy code", class_name="copy-code"),
            position="absolute",
            top="0.4em",
            right="0.4em",
        ),
        position="relative",
        class_name="code-block",
    )


def safe_markdown(text: rx.Var | str, **props: object) -> rx.Component:
    """Markdown with raw HTML switched off, math, highlighted code, images through
    :class:`MarkdownImage`.

    Reflex's markdown enables rehype-raw by default, which would render HTML from a message
    (``<script>``, ``onerror=``); off, such HTML stays text.
    """
    return rx.markdown(
        text,
        use_raw=False,
        use_math=True,
        use_katex=True,
        component_map={"img": _image, "pre": _code_block},
        **props,
    )
