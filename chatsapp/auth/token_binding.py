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
from typing import Any
from urllib.parse import parse_qs, urlencode

import reflex as rx
from reflex.istate.manager.memory import StateManagerMemory
from reflex_base.constants import RouteVar

from chatsapp.auth.guard import OwnerTabState
from chatsapp.auth.identity import connect_token, identify, is_browser_token, may_use_tab
from chatsapp.services import offload

logger = logging.getLogger(__name__)

TOKEN_REFUSED = "token_refused"  # the socket event a refused connect receives
REFUSAL = "This tab belongs to another session: it starts over as a new tab."
NEW_TOKEN = "new_token"  # Reflex's own event: the page keeps the token it names


def with_token(environ: dict[str, Any], token: str) -> dict[str, Any]:
    """A copy of ``environ`` whose connect URL names ``token`` (its other parameters kept)."""
    query = parse_qs(environ.get("QUERY_STRING", ""))
    query["token"] = [token]
    return {**environ, "QUERY_STRING": urlencode(query, doseq=True)}


def install(app: Any) -> None:
    """Check every socket connect of ``app`` (called once by the app module)."""
    namespace = getattr(app, "event_namespace", None)
    if namespace is None:
        return
    original = namespace.on_connect

    async def on_connect(sid: str, environ: dict[str, Any], auth: Any = None) -> Any:
        token = connect_token(environ)
        if token:
            verdict = await _verdict(app, namespace, sid, environ, token)
            if verdict is not Verdict.KEEP:
                if verdict is Verdict.REFUSE:
                    logger.warning("socket %s refused a client token it may not use", sid)
                    await namespace.emit(TOKEN_REFUSED, REFUSAL, to=sid)
                fresh = str(uuid.uuid4())
                await namespace.emit(NEW_TOKEN, fresh, to=sid)
                environ = with_token(environ, fresh)
        return await original(sid, environ, auth)

    namespace.on_connect = on_connect


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


async def _verdict(
    app: Any, namespace: Any, sid: str, environ: dict[str, Any], token: str
) -> Verdict:
    if not is_browser_token(token):
        return Verdict.REFUSE
    # The same headers and peer address the guard's events will see on this connection.
    static = namespace._build_static_router_data(sid, environ)
    viewer = await offload(identify, static[RouteVar.HEADERS], static[RouteVar.CLIENT_IP])
    return verdict(token, await bound_owner(app, token), viewer.user_id if viewer else "")


async def bound_owner(app: Any, token: str) -> str:
    """The person ``token``'s tab state is bound to ("" = nobody, or no such state)."""
    manager = app.state_manager
    state_token = rx.BaseStateToken(ident=token, cls=OwnerTabState)
    if isinstance(manager, StateManagerMemory) and state_token.cache_key not in manager.states:
        return ""  # reading would create a whole tab state, only to be thrown away
    with app.set_contexts():
        root = await manager.get_state(state_token)
        owner_state = await root.get_state(OwnerTabState)
    assert isinstance(owner_state, OwnerTabState)
    return owner_state._owner
