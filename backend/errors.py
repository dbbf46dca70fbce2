"""The project's errors, defined once.

Reads degrade, writes raise. Every error carries structured fields so a front end (the
Reflex UI, a script) can turn it into a sentence without parsing messages.

    ChatsError
    ├── NotFoundError (also KeyError)          kind, key
    │   ├── ChatNotFoundError                  chat_id
    │   ├── RunNotFoundError                   run_id
    │   ├── AgentNotFoundError                 agent_id, version
    │   ├── EndpointNotFoundError              endpoint
    │   ├── UserNotFoundError                  user_id
    │   ├── MemberNotFoundError                chat_id, member_id
    │   └── ShareLinkNotFoundError             (one text: never the token)
    ├── InvalidInputError (also ValueError)
    │   ├── InvalidIdError                     value
    │   ├── InputTooLargeError                 bytes, limit
    │   │   └── SessionStateTooLargeError
    │   ├── InvalidSessionStateError           errors
    │   ├── InvalidUsernameError               username, reason
    │   ├── InvalidPasswordError               reason (never the password)
    │   ├── InvalidAgentError                  field, reason
    │   ├── InvalidEndpointError               field, reason
    │   ├── UnknownModelError                  endpoint, model
    │   └── ConfigurationError                 setting
    │       └── LoopbackRequiredError          host
    ├── ConflictError
    │   ├── StaleVersionError                  expected_version, actual_version
    │   ├── LeaseLostError                     key, token
    │   ├── UsernameTakenError                 username
    │   ├── LastAdminError                     user_id
    │   └── AlreadyMemberError                 chat_id, member_id
    ├── AuthError                              (the UI shows ``str(error)`` as is)
    │   ├── InvalidCredentialsError            one text for every reason (no enumeration)
    │   ├── ThrottledError                     retry_after_s
    │   ├── PermissionDeniedError              action
    │   ├── InvalidSetupCodeError
    │   ├── SignupRefusedError                 policy
    │   ├── InvalidInviteError
    │   ├── UntrustedProxyError                peer_address
    │   ├── MissingIdentityHeaderError         header
    │   ├── AccountDisabledError               (header mode only; local mode says "invalid")
    │   ├── ChatActRefusedError                act, role (a shared chat's role forbids it)
    │   ├── CannotShareWithSelfError
    │   └── ShareRecipientUnavailableError     (unknown and disabled names read the same)
    ├── StorageError                           (wraps sqlite3.Error, ``raise ... from``)
    └── ModelError                             provider
        ├── ModelHTTPError                     status_code, body
        ├── ModelTimeoutError                  limit ("connect" | "idle" | "total"), seconds
        └── ModelStreamError
            └── ModelProtocolError
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


class EndpointNotFoundError(NotFoundError):
    def __init__(self, endpoint: str) -> None:
        super().__init__("model endpoint", endpoint)
        self.endpoint = endpoint


class InvalidInputError(ChatsError, ValueError):
    """Input that can never be valid. Subclasses ``ValueError``."""


class InvalidAgentError(InvalidInputError):
    """An agent definition refused before anything is saved; ``field`` names the form field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"agent {field}: {reason}")
        self.field = field
        self.reason = reason


class InvalidEndpointError(InvalidInputError):
    """A model endpoint refused before anything is saved; ``field`` names the form field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"model endpoint {field}: {reason}")
        self.field = field
        self.reason = reason


class UnknownModelError(InvalidInputError):
    """A model its endpoint does not offer (not in its allow-list, or not in its ``/models``)."""

    def __init__(self, endpoint: str, model: str, reason: str = "") -> None:
        detail = reason or f"endpoint {endpoint!r} does not list model {model!r}"
        super().__init__(detail)
        self.endpoint = endpoint
        self.model = model


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


class LeaseLostError(ConflictError):
    """A run's lease was taken over (it expired): its late writes are refused (fencing)."""

    def __init__(self, key: str, token: int | None) -> None:
        super().__init__(f"the lease {key!r} (token {token}) was taken over by a newer holder")
        self.key = key
        self.token = token


class UserNotFoundError(NotFoundError):
    def __init__(self, user_id: str) -> None:
        super().__init__("user", user_id)
        self.user_id = user_id


class InvalidUsernameError(InvalidInputError):
    def __init__(self, username: object, reason: str) -> None:
        super().__init__(f"{reason}: {username!r}")
        self.username = username
        self.reason = reason


class InvalidPasswordError(InvalidInputError):
    """A password the policy refuses. The message names the rule, never the password."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConfigurationError(InvalidInputError):
    """A setting that makes the server unsafe or unusable; raised before it serves anyone."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


class LoopbackRequiredError(ConfigurationError):
    def __init__(self, host: str) -> None:
        super().__init__(
            "CHATS_AUTH",
            f"CHATS_AUTH=none lets anyone who can reach the server use it without signing in, "
            f"so the server must listen on a loopback address only (127.0.0.1, ::1 or "
            f"localhost), not {host!r}. Listen on 127.0.0.1, or choose CHATS_AUTH=local.",
        )
        self.host = host


class UsernameTakenError(ConflictError):
    def __init__(self, username: str) -> None:
        super().__init__(f"The username {username!r} is taken.")
        self.username = username


class LastAdminError(ConflictError):
    def __init__(self, user_id: str) -> None:
        super().__init__("This is the last active admin; make another admin first.")
        self.user_id = user_id


class AuthError(ChatsError):
    """Sign-in, sign-up and permission refusals. Their text is written for the person."""


class InvalidCredentialsError(AuthError):
    """Unknown user, wrong password and disabled account all read the same (no enumeration)."""

    MESSAGE = "Wrong username or password."

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


class ThrottledError(AuthError):
    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"Too many attempts. Try again in {retry_after_s} seconds.")
        self.retry_after_s = retry_after_s


class PermissionDeniedError(AuthError):
    def __init__(self, action: str) -> None:
        super().__init__(f"Only an admin can {action}.")
        self.action = action


class InvalidSetupCodeError(AuthError):
    def __init__(self) -> None:
        super().__init__(
            "The setup code is wrong, or the admin account exists already. "
            "The code is printed in the console where the server was started."
        )


class SignupRefusedError(AuthError):
    def __init__(self, policy: str) -> None:
        reason = (
            "Sign-up is closed; ask an admin for an account."
            if policy == "closed"
            else "Sign-up needs an invite link from an admin."
        )
        super().__init__(reason)
        self.policy = policy


class InvalidInviteError(AuthError):
    def __init__(self) -> None:
        super().__init__("This invite link is not valid: it was used, revoked or has expired.")


class UntrustedProxyError(AuthError):
    def __init__(self, peer_address: str) -> None:
        super().__init__(
            "This server signs people in through its proxy, and this connection did not come "
            "through it. Open the app at the proxy's address."
        )
        self.peer_address = peer_address


class MissingIdentityHeaderError(AuthError):
    def __init__(self, header: str) -> None:
        super().__init__(
            f"The proxy did not say who you are (no {header} header). "
            "Sign in at the proxy, then reload."
        )
        self.header = header


class AccountDisabledError(AuthError):
    def __init__(self) -> None:
        super().__init__("This account is disabled. Ask an admin to enable it.")


class MemberNotFoundError(NotFoundError):
    """The person is not a member of this shared chat (remove, change role, leave)."""

    def __init__(self, chat_id: str, member_id: str) -> None:
        super().__init__("member", f"{member_id} of {chat_id}")
        self.chat_id = chat_id
        self.member_id = member_id


class ShareLinkNotFoundError(NotFoundError):
    """A share link that does not exist, was revoked, or whose chat is deleted: one text for
    all, and never the token (it is a secret, and errors reach logs)."""

    MESSAGE = "This link does not exist or was revoked."

    def __init__(self, link_id: str = "") -> None:
        super().__init__("share link", link_id)
        self.args = (self.MESSAGE,)
        self.link_id = link_id


class AlreadyMemberError(ConflictError):
    def __init__(self, chat_id: str, member_id: str, username: str) -> None:
        super().__init__(f"{username} is already a member of this chat.")
        self.chat_id = chat_id
        self.member_id = member_id


class ChatActRefusedError(AuthError):
    """A member whose role in a shared chat does not allow ``act`` (docs/sharing.md)."""

    def __init__(self, act: str, role: str) -> None:
        if act == "leave":
            message = "You own this chat, so you cannot leave it."
        elif role == "viewer":
            message = f"A viewer can only read this chat (refused: {act})."
        else:
            message = f"Only the owner of this chat can do that ({act})."
        super().__init__(message)
        self.act = act
        self.role = role


class CannotShareWithSelfError(AuthError):
    def __init__(self) -> None:
        super().__init__("You own this chat already; share it with someone else.")


class ShareRecipientUnavailableError(AuthError):
    """An unknown name and a disabled account read the same, so sharing cannot be used to
    learn which names exist (docs/sharing.md, "Threats")."""

    MESSAGE = "No enabled account has that username. Check the name with the person."

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


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
    """The model took too long. ``limit`` says which limit: ``"connect"`` (no connection
    within ``seconds``), ``"idle"`` (no data for ``seconds``) or ``"total"`` (the whole reply
    took longer than ``seconds``); empty when a provider cannot tell."""

    def __init__(
        self, message: str, *, provider: str = "", limit: str = "", seconds: float | None = None
    ) -> None:
        super().__init__(message, provider=provider)
        self.limit = limit
        self.seconds = seconds


class ModelStreamError(ModelError):
    """The stream broke off, or carried something that is not the protocol (a subclass)."""


class ModelProtocolError(ModelStreamError):
    """The server sent something the protocol does not allow: bytes that are not UTF-8, a line
    longer than the limit, a payload that is not JSON or has a field of the wrong type.

    A subclass of :class:`ModelStreamError`, so code that handles a broken stream handles
    this too; it exists so a malformed reply can be told apart from one that was cut off.
    """
