"""A socket is registered only for a client token that its own person may use.

Reflex links a socket to the client token in its connect URL (``?token=…``) before any event,
and from then on every update for that token — a streamed reply, a sidebar change fanned out
to the tabs linked to a person's shared states — goes to that socket. The guard
(:mod:`chatsapp.auth.guard`) checks events only, so a client that connected with a token it
learned (someone else's tab, closed) received that person's live updates without sending a
single event.

So the connect is checked too, once per connection (nothing per frame): the person of the
handshake (:func:`chatsapp.auth.identity.identify`, from the same cookie, proxy header and peer
address the guard uses) against the person the token's state is bound to
(``OwnerTabState._owner``, in the state manager: Redis across workers). A token bound to
someone else — or bound to anyone while the handshake names nobody — and a token no browser
makes (a shared state's ``user-…``, ``conv-…``) are refused: the socket is linked to a fresh
token instead and told so, as Reflex does for a duplicated tab (``new_token``), plus a
:data:`TOKEN_REFUSED` notice saying why. A browser carries on with an empty tab of its own
(signed out: the sign-in page); nothing of the token's owner ever reaches it. A token bound
to nobody (a new tab's, or one whose state expired) is swapped for a fresh one the same way,
without the notice: only a token bound to this very person is linked as it is.
"""

from __future__ import annotations

import enum
import logging
import uuid
from urllib.parse import parse_qs, urlencode

from chatsapp.auth.guard import OwnerTabState
from chatsapp.auth.identity import connect_token, identify, is_browser_token, may_use_tab
from chatsapp.reflex_seam import (
    Environ,
    ReflexApp,
    emit_to_socket,
    existing_tab_state,
    handshake_of,
    hear_connects,
)
from chatsapp.services import offload

logger = logging.getLogger(__name__)

TOKEN_REFUSED = "token_refused"  # the socket event a refused connect receives
REFUSAL = "This tab belongs to another session: it starts over as a new tab."
NEW_TOKEN = "new_token"  # Reflex's own event: the page keeps the token it names


def with_token(environ: Environ, token: str) -> Environ:
    """A copy of ``environ`` whose connect URL names ``token`` (its other parameters kept)."""
    query = parse_qs(environ.get("QUERY_STRING", ""))
    query["token"] = [token]
    return {**environ, "QUERY_STRING": urlencode(query, doseq=True)}


def install(app: ReflexApp) -> None:
    """Check every socket connect of ``app`` (called once by the app module)."""

    async def check(sid: str, environ: Environ) -> Environ:
        token = connect_token(environ)
        if token:
            verdict = await _verdict(app, sid, environ, token)
            if verdict is not Verdict.KEEP:
                if verdict is Verdict.REFUSE:
                    logger.warning("socket %s refused a client token it may not use", sid)
                    await emit_to_socket(app, TOKEN_REFUSED, REFUSAL, sid)
                fresh = str(uuid.uuid4())
                await emit_to_socket(app, NEW_TOKEN, fresh, sid)
                environ = with_token(environ, fresh)
        return environ

    hear_connects(app, check)


class Verdict(enum.Enum):
    KEEP = "keep"  # bound to this very person: the tab's own reconnect or reload
    FRESH = "fresh"  # bound to nobody: a new tab, or one whose state expired
    REFUSE = "refuse"  # bound to someone else (or anyone, signed out), or no browser's token


def verdict(token: str, owner: str, viewer_id: str) -> Verdict:
    """What a connect naming ``token`` (bound to ``owner``) gets, for ``viewer_id`` ("" = nobody).

    An unbound token is not linked either: a tab state can expire while a shared state still
    lists its token among its linked tabs, so its owner is unknown but its frames are not.
    A token the server makes now is in no such list.
    """
    if not is_browser_token(token) or not may_use_tab(owner, viewer_id):
        return Verdict.REFUSE
    return Verdict.KEEP if owner else Verdict.FRESH


async def _verdict(app: ReflexApp, sid: str, environ: Environ, token: str) -> Verdict:
    if not is_browser_token(token):
        return Verdict.REFUSE
    # The same headers and peer address the guard's events will see on this connection.
    headers, client_ip = handshake_of(app, sid, environ)
    viewer = await offload(identify, headers, client_ip)
    return verdict(token, await bound_owner(app, token), viewer.user_id if viewer else "")


async def bound_owner(app: ReflexApp, token: str) -> str:
    """The person ``token``'s tab state is bound to ("" = nobody, or no such state)."""
    owner_state = await existing_tab_state(app, token, OwnerTabState)
    if owner_state is None:
        return ""
    assert isinstance(owner_state, OwnerTabState)
    return owner_state._owner
