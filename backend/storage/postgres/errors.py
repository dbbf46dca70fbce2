"""How PostgreSQL failures reach the stores: the contract's errors, never a password.

* An integrity violation is :data:`backend.storage.scope.IntegrityError` (as on SQLite).
* Text PostgreSQL cannot hold (U+0000, a lone surrogate) is an ``InvalidInputError``: stores
  apply :func:`backend.storage.text.well_formed_text`, so reaching this is a missed case.
* A server that cannot be reached (at start, or gone mid-use) is
  :class:`StorageUnavailableError`, naming host and database.
* A commit whose reply was lost with its connection is resolved
  (:mod:`backend.storage.postgres.outcome`); when it did not commit, or nobody can tell, the
  caller gets a :class:`CommitOutcomeError` saying which (never a silent retry).
* Anything else is a ``StorageError`` naming the statement's first line.

Every message passes :func:`scrubbed` first: libpq does not echo passwords today, but a
message that ever did would still not carry one.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit

import psycopg

from backend.config import PostgresLocation
from backend.errors import InvalidInputError, StorageError
from backend.storage.scope import IntegrityError

MIN_SERVER_VERSION = 14
"""Oldest major release served: the SQL here needs less, but 14 is the oldest release still
maintained upstream when this was written, and older ones are not tested."""


class StorageUnavailableError(StorageError):
    """PostgreSQL cannot be reached (or went away): the message names host and database."""


class UnsupportedServerError(StorageError):
    """The server's major version is older than :data:`MIN_SERVER_VERSION`."""


class CommitOutcomeError(StorageUnavailableError):
    """The connection was lost while a write committed; ``outcome`` says what became of it:
    ``"aborted"`` (nothing was written: running it again is safe), ``"unknown"`` (it may have
    committed: running it again blindly could apply it twice) or ``"committed"`` (a write
    outside a transaction committed, but the rows it returned were lost with the reply)."""

    outcome = "unknown"


class CommitAbortedError(CommitOutcomeError):
    outcome = "aborted"


class CommitOutcomeUnknownError(CommitOutcomeError):
    outcome = "unknown"


class CommittedReplyLostError(CommitOutcomeError):
    outcome = "committed"


_OUTCOME_ERRORS: dict[str, tuple[type[CommitOutcomeError], str]] = {
    "aborted": (CommitAbortedError, "it did not commit; nothing was written"),
    "unknown": (CommitOutcomeUnknownError, "whether it committed cannot be told"),
    "committed": (CommittedReplyLostError, "it committed, but its reply was lost"),
}


def commit_outcome_error(
    outcome: str, location: PostgresLocation, exc: BaseException
) -> CommitOutcomeError:
    """The typed error for a commit whose connection was lost, saying its ``outcome``."""
    kind, meaning = _OUTCOME_ERRORS[outcome]
    reason = scrubbed(" ".join(str(exc).split()), location) or type(exc).__name__
    return kind(
        f"storage unavailable: the connection to PostgreSQL ({location.describe()}) was lost "
        f"while a write committed, and {meaning} ({reason})"
    )


def scrubbed(text: str, location: PostgresLocation) -> str:
    """``text`` with the URL and its password (as typed and percent-encoded) taken out."""
    text = text.replace(location.url, location.redacted)
    password = _password(location)
    if password:
        for spelling in {password, quote(password, safe="")}:
            text = text.replace(spelling, "***")
    return text


def _password(location: PostgresLocation) -> str:
    parts = urlsplit(location.url)
    for key, value in parse_qsl(parts.query):
        if key.lower() == "password":
            return value
    return unquote(parts.password or "")


def unavailable(location: PostgresLocation, exc: BaseException) -> StorageUnavailableError:
    reason = scrubbed(" ".join(str(exc).split()), location) or type(exc).__name__
    return StorageUnavailableError(
        f"storage unavailable: cannot reach PostgreSQL ({location.describe()}): {reason}"
    )


def check_server_version(version_num: int, location: PostgresLocation) -> None:
    """Refuse a server older than :data:`MIN_SERVER_VERSION`, naming its version."""
    major = version_num // 10_000
    if major < MIN_SERVER_VERSION:
        shown = f"{major}.{version_num % 10_000}" if major >= 10 else str(version_num)
        raise UnsupportedServerError(
            f"PostgreSQL {shown} ({location.describe()}) is not supported: Chats needs "
            f"PostgreSQL {MIN_SERVER_VERSION} or newer"
        )


def translated(exc: psycopg.Error, sql: str, location: PostgresLocation) -> Exception:
    """The contract's exception for a failed statement (to raise ``from exc``)."""
    message = scrubbed(str(exc).strip(), location)
    shown = " ".join(sql.split())[:120]
    if isinstance(exc, psycopg.IntegrityError):
        return IntegrityError(f"{message} (in: {shown})")
    if isinstance(exc, psycopg.DataError) and "NUL" in message:
        return InvalidInputError(f"text holding U+0000 cannot be stored (in: {shown})")
    if isinstance(exc, psycopg.OperationalError) and (
        isinstance(exc, psycopg.errors.ConnectionTimeout | psycopg.errors.AdminShutdown)
        or exc.sqlstate is None
        or exc.sqlstate.startswith("08")
    ):
        return unavailable(location, exc)
    return StorageError(f"{message} (in: {shown})")
