"""A streaming reply as a tab shows it, rebuilt from the conversation deltas the tab receives.

The reply's text travels in pieces (``chatsapp.live.stream_pieces``): each delta carries only the
pieces that changed, and the page shows them joined. Tests and benchmarks that read frames
keep one of these per tab.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatsapp.live.stream_pieces import PIECE_LEVELS, PIECE_VAR, joined


def piece_level(name: str) -> int | None:
    """The level a delta key names (``streaming_piece_3_rx_state_`` → 3), else ``None``."""
    base = name.removesuffix("_rx_state_")
    digits = base.removeprefix(PIECE_VAR)
    return int(digits) if base.startswith(PIECE_VAR) and digits.isdigit() else None


class StreamedText:
    """The pieces a tab holds; ``apply`` each conversation delta entry in arrival order."""

    def __init__(self) -> None:
        self.pieces = [""] * PIECE_LEVELS

    def apply(self, values: Mapping[str, Any]) -> int:
        """Take the pieces ``values`` carries; the UTF-8 bytes of text they carried."""
        carried = 0
        for name, value in values.items():
            level = piece_level(name)
            if level is not None:
                self.pieces[level] = str(value)
                carried += len(str(value).encode())
        return carried

    @property
    def text(self) -> str:
        return joined(self.pieces)
