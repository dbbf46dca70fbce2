"""The project's errors, defined once.

Reads degrade, writes raise. Every error carries structured fields so a front end (the
Reflex UI, a script) can turn it into a sentence without parsing messages.

    ChatsError
    ├── NotFoundError (also KeyError)          kind, key
    │   ├── ChatNotFoundError                  chat_id
    │   ├── RunNotFoundError                   run_id
    │   └── AgentNotFoundError                 agent_id, version
    ├── InvalidInputError (also ValueError)
    │   ├── InvalidIdError                     value
    │   ├── InputTooLargeError                 bytes, limit
    │   │   └── SessionStateTooLargeError
    │   └── InvalidSessionStateError           errors
    ├── ConflictError
    │   └── StaleVersionError                  expected_version, actual_version
    ├── StorageError                           (wraps sqlite3.Error, ``raise ... from``)
    ├── ModelError                             provider
    │   ├── ModelHTTPError                     status_code, body
    │   ├── ModelTimeoutError
    │   └── ModelStreamError
    └── RunCancelledError                      run_id
"""

from __future__ import annotations


class ChatsError(Exception):
    """Base of every error this project raises on purpose."""


class NotFoundError(ChatsError, KeyError):
    """A well-formed key that names nothing live; also a ``KeyError``."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")
        self.kind = kind
        self.key = key

    def __str__(self) -> str:  # KeyError.__str__ would repr() the message
        return str(self.args[0])


class ChatNotFoundError(NotFoundError):
    def __init__(self, chat_id: str) -> None:
        super().__init__("chat", chat_id)
        self.chat_id = chat_id


class RunNotFoundError(NotFoundError):
    def __init__(self, run_id: str) -> None:
        super().__init__("run", run_id)
        self.run_id = run_id


class AgentNotFoundError(NotFoundError):
    def __init__(self, agent_id: str, version: int | None = None) -> None:
        key = agent_id if version is None else f"{agent_id}@{version}"
        super().__init__("agent", key)
        self.agent_id = agent_id
        self.version = version


class InvalidInputError(ChatsError, ValueError):
    """Input that can never be valid. Subclasses ``ValueError``."""


class InvalidIdError(InvalidInputError):
    """A malformed or hostile id (path traversal, separators, NUL, foreign directory)."""

    def __init__(self, value: object, reason: str = "malformed id") -> None:
        super().__init__(f"{reason}: {value!r}")
        self.value = value


class InputTooLargeError(InvalidInputError):
    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size:,} bytes; the limit is {limit:,} bytes")
        self.bytes = size
        self.limit = limit


class SessionStateTooLargeError(InputTooLargeError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__("session state", size, limit)


class InvalidSessionStateError(InvalidInputError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("invalid session state: " + "; ".join(errors))
        self.errors = errors


class ConflictError(ChatsError):
    """A write lost a race; nothing was changed. Retry after re-reading."""


class StaleVersionError(ConflictError):
    def __init__(self, what: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"{what} is at version {actual_version}, the write expected {expected_version}"
        )
        self.expected_version = expected_version
        self.actual_version = actual_version


class StorageError(ChatsError):
    """The database failed (disk full, corrupt file, lock timeout). Chained from sqlite3.Error."""


class ModelError(ChatsError):
    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message)
        self.provider = provider


class ModelHTTPError(ModelError):
    def __init__(self, status_code: int, body: str, *, provider: str = "") -> None:
        message = f"model server answered HTTP {status_code}: {body[:300]}"
        super().__init__(message, provider=provider)
        self.status_code = status_code
        self.body = body


class ModelTimeoutError(ModelError):
    pass


class ModelStreamError(ModelError):
    """The stream broke off or carried something that is not the protocol."""


class RunCancelledError(ChatsError):
    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} was cancelled")
        self.run_id = run_id
