"""Every log record of the process can be written by any handler, whatever text it carries.

Text from outside (a model's stream, a user's message, a file name) reaches log lines through
arguments and exception messages. A lone UTF-16 surrogate in it cannot be encoded as UTF-8: a
handler writing UTF-8 strictly loses the line ("--- Logging error ---"), and one that sends
records on (pytest-xdist's channel from a worker) crashed its process. :func:`install` wraps
the record factory so that a record's message and exception text follow the storage text
rule (:func:`backend.storage.well_formed_text`: U+FFFD instead) before any handler, filter or
formatter sees it. A record that is already well-formed (nearly all) is left exactly as made.
"""

from __future__ import annotations

import logging
from typing import Any

from backend.storage import well_formed_text

_FORMATTER = logging.Formatter()


def install() -> None:
    """Make every record of this process well-formed from now on (idempotent: a host calls it
    at start; a factory set before is kept and wrapped)."""
    made_by = logging.getLogRecordFactory()
    if getattr(made_by, "makes_well_formed_records", False):
        return

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return well_formed_record(made_by(*args, **kwargs))

    make.makes_well_formed_records = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(make)


def well_formed_record(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` with its message and exception text well-formed (changed in place)."""
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: the handler reports it, as ever
        return record
    fixed = well_formed_text(message)
    if fixed is not message:
        record.msg, record.args = fixed, None
    if record.exc_info and not record.exc_text:
        # Formatters take the cached text when there is one: cache it only when it is needed.
        text = _FORMATTER.formatException(record.exc_info)
        fixed = well_formed_text(text)
        if fixed is not text:
            record.exc_text = fixed
    return record
