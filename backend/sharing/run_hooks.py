"""What an owner's runtime asks the sharing store about its chats, as two plain callables.

The runtime (``backend.runtime``) never imports sharing: it takes ``participants(chat_id)``
and ``owner_context(chat_id)`` (``ChatRuntime(..., participants=, owner_context=)``). One
runtime serves one owner's directory, so the owner's id completes each chat's name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from backend.sharing.values import ChatRef


class _Membership(Protocol):
    def participant_ids(self, chat: ChatRef) -> tuple[str, ...]: ...

    def run_may_use_owner_context(self, chat: ChatRef) -> bool: ...


@dataclass(frozen=True, slots=True)
class RunHooks:
    """The sharing answers one owner's runtime needs, read from the store on every call."""

    membership: _Membership
    owner_id: str

    def participants(self, chat_id: str) -> tuple[str, ...]:
        """The conversation record's ``participantIds``: the owner first, then the members."""
        return self.membership.participant_ids(self._chat(chat_id))

    def owner_context(self, chat_id: str) -> bool:
        """Whether a run of the chat may read the owner's memory and other chats."""
        return self.membership.run_may_use_owner_context(self._chat(chat_id))

    def _chat(self, chat_id: str) -> ChatRef:
        return ChatRef(owner_id=self.owner_id, chat_id=chat_id)
