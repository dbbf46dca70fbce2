"""Who may do what in a shared chat: one table, read by :func:`role_allows`.

Pure (no I/O): :meth:`backend.sharing.Sharing.authorize` finds the person's role in a chat
and asks this table; the UI and the runtime call ``authorize`` before every act, so a rule
changes here and nowhere else. ``owner`` is the person whose directory holds the chat;
``participant`` and ``viewer`` are the roles an owner gives (docs/sharing.md, "Roles").

Why these rules:

* a **participant** talks in the chat (send, retry, branch: the acts the issue names) but
  changes nothing that is the owner's to decide: the title, the session state, who else
  sees it, its deletion, and editing existing messages (a member could rewrite what someone
  else said);
* **fork** and **export** copy the owner's transcript somewhere the owner cannot take it
  back from; a member reads it while the owner lets them, so both stay with the owner;
* **leave** is the members' own way out; the owner has no membership to leave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

ChatRole = Literal["owner", "participant", "viewer"]
MemberRole = Literal["participant", "viewer"]
Act = Literal[
    "read",
    "send",
    "retry",
    "branch",
    "edit",
    "rename",
    "delete",
    "fork",
    "share",
    "change-state",
    "export",
    "leave",
]

CHAT_ROLES: tuple[ChatRole, ...] = get_args(ChatRole)
MEMBER_ROLES: tuple[MemberRole, ...] = get_args(MemberRole)
ACTS: tuple[Act, ...] = get_args(Act)

ALLOWED_ACTS: Mapping[ChatRole, frozenset[Act]] = {
    "owner": frozenset(ACTS) - {"leave"},
    "participant": frozenset({"read", "send", "retry", "branch", "leave"}),
    "viewer": frozenset({"read", "leave"}),
}
"""The one table (docs/sharing.md prints it). Anything not listed is refused."""


def role_allows(role: ChatRole, act: Act) -> bool:
    return act in ALLOWED_ACTS[role]


def is_act(value: object) -> bool:
    return isinstance(value, str) and value in ACTS


def is_member_role(value: object) -> bool:
    return isinstance(value, str) and value in MEMBER_ROLES
