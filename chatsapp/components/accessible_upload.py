"""A file drop zone that keyboard and screen-reader users meet as one control: its button.

react-dropzone adds two things besides the control a page puts in the zone: a visually hidden
``<input type=file>`` that stays in the accessibility tree (a second, unnamed "button": axe's
``label`` rule, critical), and a focusable zone (a second tab stop, a ``div``). Reflex's
``rx.upload.root`` creates that input itself and passes it no attributes, so the input is
hidden from assistive technology here (it is never focusable: react-dropzone gives it
``tabindex=-1``), and the zone leaves the tab order (``noKeyboard``). The button inside is the
way in: its click reaches the zone, which opens the file picker.
"""

from __future__ import annotations

from collections.abc import Iterator

import reflex as rx
from reflex_components_core.el.elements.forms import Input

from chatsapp.reflex_seam import var_data_of


def accessible_upload(*children: rx.Component, **props: object) -> rx.Component:
    """``rx.upload.root(*children, **props)``, reached and named through its children only."""
    props.setdefault("no_keyboard", True)
    upload = rx.upload.root(*children, **props)
    file_input = next(_inputs(upload), None)
    if file_input is None:
        raise TypeError("rx.upload.root holds no <input>: its file input cannot be hidden")
    # Before react-dropzone's own props, which are spread after it and override nothing here.
    file_input.custom_attrs = {**file_input.custom_attrs, "aria-hidden": "true"}
    return upload


def _inputs(component: rx.Component) -> Iterator[Input]:
    for child in component.children:
        if isinstance(child, Input):
            yield child
        yield from _inputs(child)


def refused_before_upload(
    rejections: rx.Var, limit: rx.Var[int], kinds: str, done: str
) -> rx.event.EventSpec:
    """A toast naming each file the picker refused and why (its size against ``limit``, or
    its type: "``kinds``"), saying it was not ``done``; nothing of it was uploaded."""
    message = rx.Var(
        _js_expr=(
            f"({rejections!s}).map((r) => {{"
            " const name = r.file?.name ?? r.file?.path ?? 'A file';"
            " const codes = (r.errors ?? []).map((e) => e.code);"
            " if (codes.includes('file-too-large')) return `${name} is"
            " ${(r.file?.size ?? 0).toLocaleString('en')} bytes; the limit is"
            f" ${{({limit!s}).toLocaleString('en')}} bytes. Not {done}.`;"
            f" if (codes.includes('file-invalid-type')) return `${{name}} cannot be {done}:"
            f" {kinds}.`;"
            " return `${name}: ${(r.errors ?? []).map((e) => e.message).join(', ')}`;"
            " }).join(' ')"
        ),
        _var_data=var_data_of(limit),
    ).to(str)
    return rx.toast.error(message, id="upload-refused")
