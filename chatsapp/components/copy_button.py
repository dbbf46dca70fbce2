"""A copy-to-clipboard button with a "Copied" confirmation, for messages and code blocks."""

from __future__ import annotations

import reflex as rx


class CopyButton(rx.Component):
    """``copy_button.jsx`` beside this file: copies ``text``, then shows "Copied" briefly."""

    library = rx.asset("copy_button.jsx", shared=True).importable_path
    tag = "CopyButton"

    text: rx.Var[str]
    label: rx.Var[str]
