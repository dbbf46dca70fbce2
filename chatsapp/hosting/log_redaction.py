"""What a client sent never puts its credentials, or megabytes, into the server's log.

Reflex logs an event it cannot route (an unknown handler name, which any client can send)
with the event's whole ``router_data``: the handshake headers, so the sender's session cookie,
and the whole payload (a 500 KB argument is 500 KB of log per event). The filter rewrites
such a record before any handler writes it: cookie and authorization values are replaced,
and the message is cut to :data:`MAX_LOGGED_CHARS`. Every record of the process is made
well-formed first (:mod:`backend.log_records`), so no log line can fail to be written.
"""

from __future__ import annotations

import logging
import re

from backend import log_records
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.reflex_seam import event_logger

MAX_LOGGED_CHARS = 4000
_SECRET_HEADERS = re.compile(r"""(['"](?:cookie|authorization)['"]: ['"])[^'"]*""", re.IGNORECASE)
_SESSION = re.compile(rf"({re.escape(SESSION_COOKIE)}=)[^;'\"\s]*")


def redacted(text: str) -> str:
    """``text`` without cookie or authorization values, at most ``MAX_LOGGED_CHARS`` long."""
    text = _SESSION.sub(r"\1[redacted]", _SECRET_HEADERS.sub(r"\1[redacted]", text))
    if len(text) > MAX_LOGGED_CHARS:
        text = f"{text[:MAX_LOGGED_CHARS]}… [{len(text) - MAX_LOGGED_CHARS:,} more characters]"
    return text


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redacted(record.getMessage()), None
        return True


def install() -> None:
    """Redact the records of Reflex's event processor; make every record well-formed
    (idempotent)."""
    log_records.install()
    logger = event_logger()
    if not any(isinstance(f, _Redact) for f in logger.filters):
        logger.addFilter(_Redact())
