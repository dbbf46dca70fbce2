"""Every page builds without a Reflex deprecation, so the next Reflex release breaks none of them.

A deprecated use keeps working until the release that removes it, so only a warning in the
server's log tells of it (Reflex 0.10.1: a form control submitted by its ``id``).
"""

from __future__ import annotations

from typing import Any

import pytest
from reflex_base.utils import console


def test_no_page_uses_anything_reflex_deprecates(monkeypatch: pytest.MonkeyPatch):
    from chatsapp.chatsapp import app

    warned: list[str] = []

    def deprecate(*, feature_name: str, reason: str, **_: Any) -> None:
        warned.append(f"{feature_name}: {reason}")

    # Recorded here on every call (Reflex's own prints each feature once per process).
    monkeypatch.setattr(console, "deprecate", deprecate)
    routes = sorted(app._unevaluated_pages)
    for route in routes:
        app._unevaluated_pages[route].component().render()
    assert "agents" in routes
    assert warned == []
