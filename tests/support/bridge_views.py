"""Stand-ins for the shared states the live bridge writes into, and small helpers of the
tests and soaks that drive a real bridge against a fake Reflex app.

A :class:`View` has the fields of every shared state the bridge writes (the run pump's, the
lists', a header's) and records what it was asked to do, so bridge tests need no Reflex state
tree; :class:`ViewStates` is a state manager whose every shared token holds one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backend.chats.sidebar import SidebarPage
from backend.messages import WrittenMessage
from chatsapp.live.stream_pieces import PIECE_LEVELS, append
from chatsapp.services import Services
from tests.support.fake_reflex_app import FakeReflexApp

USER = "alice"


@dataclass
class View:
    """The fields of the shared states the bridge writes (the pump's, lists', a header's)."""

    queued: int = 0
    streaming: bool = False
    pieces: list[str] = field(default_factory=lambda: [""] * PIECE_LEVELS)
    streaming_message_id: str = ""
    error: str = ""
    refreshed: list[str] = field(default_factory=list)
    loaded: bool = False
    archived: bool = False
    chat_id: str = ""  # a header's: empty until a tab linked it
    agent_id: str = ""
    reloads: int = 0

    async def refresh(self, user_id: str) -> None:
        self.refreshed.append(user_id)

    def show_written(self, written: Sequence[WrittenMessage], *, in_place: bool = False) -> bool:
        """This view cannot show a message from its event: it re-reads (``refreshed``)."""
        return False

    @classmethod
    def get_full_name(cls) -> str:
        """The name frames sent straight to tabs file its vars under (a state's full name)."""
        return "view"

    @property
    def streaming_text(self) -> str:
        return "".join(reversed(self.pieces))

    def append_streamed(self, text: str) -> None:
        for level, piece in append(self.pieces, text).items():
            self.pieces[level] = piece

    def clear_streamed(self) -> None:
        self.pieces = [""] * PIECE_LEVELS

    def show_newest_piece(self, text: str) -> None:
        self.pieces[0] = text

    def streamed_pieces(self) -> list[str]:
        return list(self.pieces)

    async def reload(self, user_id: str, *, touch: bool = True) -> None:
        self.reloads += 1

    def show(self, page: SidebarPage) -> None:
        """A sidebar page the bridge read: counted as a reload of this list."""
        self.reloads += 1


class ViewRoot:
    """A shared token's state tree holding one view and no linked tab (nothing to send)."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.substates: dict[str, Any] = {}

    async def get_state(self, _cls: type) -> View:
        return self.view

    async def _get_resolved_delta(self) -> dict[str, Any]:
        return {}

    def _clean(self) -> None:
        pass


class ViewStates:
    """A state manager whose every shared token holds one :class:`View`, kept in ``views``."""

    def __init__(self) -> None:
        self.views: dict[str, View] = {}

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any) -> AsyncIterator[ViewRoot]:
        yield ViewRoot(self.views.setdefault(token.ident, View()))


def views_of(app: FakeReflexApp) -> dict[str, View]:
    return app.state_manager.views


def watchers(served: Services) -> int:
    return served.runtime(USER).footprint().watchers


def new_chat(served: Services) -> str:
    return served.directory(USER).create_chat().id


def files_open_under(folder: Path) -> int:
    """This process's file descriptors on files in ``folder`` (SQLite databases, journals)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (listdir's own descriptor)
            continue
        count += target.startswith(str(folder))
    return count
