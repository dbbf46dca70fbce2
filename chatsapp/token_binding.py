"""A socket is registered only for a client token that its own person may use.

Reflex links a socket to the client token in its connect URL (``?token=…``) before any event,
and from then on every update for that token — a streamed reply, a sidebar change fanned out
to the tabs linked to a person's shared states — goes to that socket. The guard
(:mod:`chatsapp.auth_guard`) checks events only, so a client that connected with a token it
learned (someone else's tab, closed) received that person's live updates without sending a
single event.

So the connect is checked too, once per connection (nothing per frame): the person of the
handshake (:func:`chatsapp.identity.identify`, from the same cookie, proxy header and peer
address the guard uses) against the person the token's state is bound to
(``OwnerTabState._owner``, in the state manager: Redis across workers). A token bound to
someone else — or bound to anyone while the handshake names nobody — and a token no browser
makes (a shared state's ``user-…``, ``conv-…``) are not linked: the socket is linked to a
fresh token instead and told so, as Reflex does for a duplicated tab (``new_token``), plus a
:data:`TOKEN_REFUSED` notice saying why. A browser carries on with an empty tab of its own
(signed out: the sign-in page); nothing of the token's owner ever reaches it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import parse_qs, urlencode

import reflex as rx
from reflex_base.constants import RouteVar

from chatsapp.auth_guard import OwnerTabState
from chatsapp.identity import identify, is_browser_token, may_use_tab
from chatsapp.services import offload

logger = logging.getLogger(__name__)

TOKEN_REFUSED = "token_refused"  # the socket event a refused connect receives
REFUSAL = "This tab belongs to another session: it starts over as a new tab."
NEW_TOKEN = "new_token"  # Reflex's own event: the page keeps the token it names


def connect_token(environ: dict[str, Any]) -> str:
    """The client token a socket asked for in its connect URL (``""`` if none)."""
    return (parse_qs(environ.get("QUERY_STRING", "")).get("token") or [""])[0]


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
        if token and not await _may_link(app, namespace, sid, environ, token):
            fresh = str(uuid.uuid4())
            logger.warning("socket %s refused a client token it may not use", sid)
            await namespace.emit(TOKEN_REFUSED, REFUSAL, to=sid)
            await namespace.emit(NEW_TOKEN, fresh, to=sid)
            environ = with_token(environ, fresh)
        return await original(sid, environ, auth)

    namespace.on_connect = on_connect


async def _may_link(
    app: Any, namespace: Any, sid: str, environ: dict[str, Any], token: str
) -> bool:
    if not is_browser_token(token):
        return False
    # The same headers and peer address the guard's events will see on this connection.
    static = namespace._build_static_router_data(sid, environ)
    viewer = await offload(identify, static[RouteVar.HEADERS], static[RouteVar.CLIENT_IP])
    with app.set_contexts():
        root = await app.state_manager.get_state(rx.BaseStateToken(ident=token, cls=OwnerTabState))
        owner_state = await root.get_state(OwnerTabState)
    assert isinstance(owner_state, OwnerTabState)
    return may_use_tab(owner_state._owner, viewer.user_id if viewer is not None else "")
