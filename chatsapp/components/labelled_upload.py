"""A file drop zone whose file input has an accessible name.

react-dropzone keeps the zone's ``<input type=file>`` in the accessibility tree (visually
hidden, not ``display: none``), so a screen reader reaches it; Reflex's ``rx.upload.root``
creates that input itself and passes it no attributes, so without this it has no name (axe's
``label`` rule, critical). The input keeps every prop react-dropzone gives it.
"""

from __future__ import annotations

from collections.abc import Iterator

import reflex as rx
from reflex_components_core.el.elements.forms import Input


def labelled_upload(label: str, *children: rx.Component, **props: object) -> rx.Component:
    """``rx.upload.root(*children, **props)`` with its file input named ``label``."""
    upload = rx.upload.root(*children, **props)
    file_input = next(_inputs(upload), None)
    if file_input is None:
        raise TypeError("rx.upload.root holds no <input>: its file input cannot be named")
    file_input.custom_attrs = {**file_input.custom_attrs, "aria-label": label}
    return upload


def _inputs(component: rx.Component) -> Iterator[Input]:
    for child in component.children:
        if isinstance(child, Input):
            yield child
        yield from _inputs(child)
