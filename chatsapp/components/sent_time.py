"""The time a message was sent, exact on hover, formatted in the reader's time zone."""

from __future__ import annotations

import reflex as rx


class SentTime(rx.Component):
    """``sent_time.jsx`` beside this file; renders nothing for an unknown time (0)."""

    library = rx.asset("sent_time.jsx", shared=True).importable_path
    tag = "SentTime"

    at: rx.Var[int]
