"""Every setting the application reads from its environment, in one place.

Defaults are the embedded, offline configuration: SQLite files under ``./data`` and the
built-in offline assistant. Nothing else in the code base reads ``os.environ`` for
application settings; callers take a :class:`Settings` (tests build their own).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

_N = TypeVar("_N", int, float)

DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024
DEFAULT_MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
DEFAULT_SOFT_DELETE_WINDOW_S = 7 * 24 * 3600
DEFAULT_TEMPORARY_CHAT_TTL_S = 24 * 3600  # a temporary chat's longest life
DEFAULT_TEMPORARY_CHAT_GRACE_S = 120  # how long it outlives its last window
DEFAULT_MAX_ATTACHMENTS_PER_MESSAGE = 10
DEFAULT_MAX_MESSAGE_ATTACHMENT_BYTES = 20 * 1024 * 1024
DEFAULT_SIGN_IN_TTL_S = 30 * 24 * 3600
DEFAULT_MAX_IMPORT_BYTES = 1024**3  # an import file (ChatGPT exports with images run to GBs)
AUTH_MODES = ("local", "header", "none")
PASSWORD_HASH_PROFILES = ("default", "cheapest")
# SQLite durability (backend.storage.durability says what each promises and issues each as
# its PRAGMA). The first is the default.
SQLITE_SYNCHRONOUS_LEVELS = ("normal", "full")
# Model client limits: a model server is untrusted input (see backend.models.openai_compatible).
DEFAULT_MODEL_TIMEOUT_S = 60.0  # idle: longest wait for the next data event
DEFAULT_MODEL_TOTAL_TIMEOUT_S = 15 * 60.0  # a slow local model writing a long answer fits
DEFAULT_MODEL_MAX_REPLY_BYTES = 1024 * 1024  # about 250k words; longer replies are cut
# One SSE line carries one chunk; some servers send a whole reply as one chunk, JSON-escaped
# (up to 6 bytes per character as \uXXXX), so the line limit stays well above the reply cap.
DEFAULT_MODEL_MAX_LINE_BYTES = 8 * 1024 * 1024


POSTGRES_SCHEMES = ("postgresql", "postgres")
_REDACTED = "***"


@dataclass(frozen=True, slots=True)
class PostgresLocation:
    """A ``postgresql://`` URL from ``CHATS_STORAGE``, and the parts a message may name.

    The URL itself (which may hold a password) is only ever handed to the driver: ``repr``,
    ``str`` and :attr:`redacted` show it with the password (also a ``password=`` query
    parameter) replaced by ``***``, so a log line, an error or a page built from the settings
    cannot leak it.
    """

    url: str = field(repr=False)
    host: str
    port: int | None
    database: str
    user: str

    @property
    def redacted(self) -> str:
        return redact_url(self.url)

    def describe(self) -> str:
        """``database "chats" on db.example:5432``: what an error names (never the password)."""
        where = self.host or "the local socket"
        return f'database "{self.database}" on {where}{f":{self.port}" if self.port else ""}'

    def __repr__(self) -> str:
        return f"PostgresLocation({self.redacted})"

    def __str__(self) -> str:
        return self.redacted


StorageChoice = str | PostgresLocation
"""``"sqlite"`` (files under the data folder) or a PostgreSQL database."""

POSTGRES_ROOT = Path("/chats")
"""The root every store is named under on PostgreSQL, whatever the node's data folder.

A scope is named as the file SQLite would use (``os.path.abspath``: ``/chats/<directory>/
directory.sqlite``, ``/chats/<directory>/chats/<chat>.g<generation>.sqlite``). Under the data
folder, two nodes with different folders would name different scopes for one person's chats;
under this fixed root they name the same ones. Nothing is created or read at this path.
"""


def storage_root(data_dir: Path, storage: StorageChoice) -> Path:
    """Where a person's directory and chats are named: the data folder on SQLite (where their
    files are), :data:`POSTGRES_ROOT` on PostgreSQL."""
    return POSTGRES_ROOT if isinstance(storage, PostgresLocation) else data_dir


def redact_url(url: str) -> str:
    """``url`` with any password (in the userinfo or a ``password=`` parameter) as ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostinfo = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + _REDACTED
        netloc = f"{userinfo}@{hostinfo}"
    query = "&".join(
        f"{key}={_REDACTED if key.lower() == 'password' else value}"
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return parts._replace(netloc=netloc, query=query).geturl()


def parse_storage(raw: str) -> StorageChoice:
    """``CHATS_STORAGE``: empty or ``sqlite`` → ``"sqlite"``; a ``postgresql://`` URL → a
    :class:`PostgresLocation`. Anything else is a ``ValueError`` that never repeats a password.
    """
    value = raw.strip()
    if not value or value.lower() == "sqlite":
        return "sqlite"
    shown = redact_url(value)
    scheme = value.split(":", 1)[0].lower() if "://" in value else ""
    if scheme not in POSTGRES_SCHEMES:
        raise ValueError(
            f"CHATS_STORAGE must be sqlite or a postgresql://user:password@host:port/database "
            f"URL; got {shown!r}"
        )
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"CHATS_STORAGE: the port of {shown!r} is not a number") from exc
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ValueError(
            f"CHATS_STORAGE must name one database (postgresql://host/chats); got {shown!r}"
        )
    return PostgresLocation(
        url=value,
        host=parts.hostname or "",
        port=port,
        database=database,
        user=unquote(parts.username or ""),
    )


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved configuration. ``model_base_url`` empty means the offline assistant."""

    data_dir: Path
    frontend_port: int
    backend_port: int
    model_base_url: str
    model_api_key: str
    model_name: str
    model_timeout_s: float  # idle limit: no data event for this long fails the reply
    offline_chunk_delay_s: float | None  # None: the offline assistant's own reading pace
    max_message_bytes: int
    max_attachment_bytes: int
    soft_delete_window_s: int
    user_id: str
    redis_url: str
    max_attachments_per_message: int = DEFAULT_MAX_ATTACHMENTS_PER_MESSAGE
    max_message_attachment_bytes: int = DEFAULT_MAX_MESSAGE_ATTACHMENT_BYTES
    model_total_timeout_s: float = DEFAULT_MODEL_TOTAL_TIMEOUT_S
    model_max_reply_bytes: int = DEFAULT_MODEL_MAX_REPLY_BYTES
    model_max_line_bytes: int = DEFAULT_MODEL_MAX_LINE_BYTES
    # More endpoints besides the default one, as JSON (parsed and checked by backend.endpoints).
    model_endpoints: str = ""
    expose_worker_id: bool = False  # tests only: shows which worker process serves a tab
    auth_mode: str = "local"  # one of AUTH_MODES
    auth_header: str = ""  # header mode: the header that names the person
    trusted_proxies: tuple[str, ...] = ()  # header mode: IPs / CIDRs allowed to set it
    sign_in_ttl_s: int = DEFAULT_SIGN_IN_TTL_S
    # "cheapest" is for tests only: argon2 at its minimum cost keeps the suite fast.
    password_hash_profile: str = "default"
    sqlite_synchronous: str = SQLITE_SYNCHRONOUS_LEVELS[0]
    listen_host: str = "0.0.0.0"  # where scripts/run serves (CHATS_AUTH=none needs loopback)
    max_import_bytes: int = DEFAULT_MAX_IMPORT_BYTES  # largest file the Settings page imports
    workers: int = 1  # server processes (chatsapp.hosting.server); more than one needs Redis
    # Where everything durable lives: "sqlite" (files under data_dir) or PostgreSQL.
    storage: StorageChoice = "sqlite"
    # The origins (scheme://host[:port]) the app's pages are served from. Empty: the origin
    # each request names in its Host header (and, apart, the development server's pages).
    allowed_origins: tuple[str, ...] = ()
    # Search by meaning (backend.meaning.embedder_from_setting): "bundled" (the packaged
    # offline model), "off", or an OpenAI-compatible base URL with its model and key.
    embedder: str = "bundled"
    embedder_model: str = ""
    embedder_api_key: str = field(default="", repr=False)
    temporary_chat_ttl_s: int = DEFAULT_TEMPORARY_CHAT_TTL_S
    temporary_chat_grace_s: float = DEFAULT_TEMPORARY_CHAT_GRACE_S

    @property
    def offline_model(self) -> bool:
        return not self.model_base_url

    @property
    def on_postgresql(self) -> bool:
        """Whether everything durable lives in PostgreSQL (the data folder then holds none)."""
        return isinstance(self.storage, PostgresLocation)

    @property
    def storage_root(self) -> Path:
        """The root directories and chats are named under (:func:`storage_root`)."""
        return storage_root(self.data_dir, self.storage)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(
            data_dir=Path(env.get("CHATS_DATA_DIR", "data")).expanduser(),
            frontend_port=_int(env, "CHATS_FRONTEND_PORT", 3000),
            backend_port=_int(env, "CHATS_BACKEND_PORT", 8000),
            model_base_url=env.get("CHATS_MODEL_BASE_URL", "").rstrip("/"),
            model_api_key=env.get("CHATS_MODEL_API_KEY", ""),
            model_name=env.get("CHATS_MODEL", ""),
            model_timeout_s=_float(
                env, "CHATS_MODEL_TIMEOUT_S", DEFAULT_MODEL_TIMEOUT_S, positive=True
            ),
            offline_chunk_delay_s=(
                _float(env, "CHATS_OFFLINE_CHUNK_DELAY_S", 0.0)
                if env.get("CHATS_OFFLINE_CHUNK_DELAY_S")
                else None
            ),
            max_message_bytes=_int(env, "CHATS_MAX_MESSAGE_BYTES", DEFAULT_MAX_MESSAGE_BYTES),
            max_attachment_bytes=_int(
                env, "CHATS_MAX_ATTACHMENT_BYTES", DEFAULT_MAX_ATTACHMENT_BYTES
            ),
            soft_delete_window_s=_int(
                env, "CHATS_SOFT_DELETE_WINDOW_S", DEFAULT_SOFT_DELETE_WINDOW_S
            ),
            user_id=env.get("CHATS_USER", "local"),
            redis_url=env.get("REFLEX_REDIS_URL", ""),
            max_attachments_per_message=_int(
                env, "CHATS_MAX_ATTACHMENTS_PER_MESSAGE", DEFAULT_MAX_ATTACHMENTS_PER_MESSAGE
            ),
            max_message_attachment_bytes=_int(
                env, "CHATS_MAX_MESSAGE_ATTACHMENT_BYTES", DEFAULT_MAX_MESSAGE_ATTACHMENT_BYTES
            ),
            model_total_timeout_s=_float(
                env, "CHATS_MODEL_TOTAL_TIMEOUT_S", DEFAULT_MODEL_TOTAL_TIMEOUT_S, positive=True
            ),
            model_max_reply_bytes=_int(
                env, "CHATS_MODEL_MAX_REPLY_BYTES", DEFAULT_MODEL_MAX_REPLY_BYTES, positive=True
            ),
            model_max_line_bytes=_int(
                env, "CHATS_MODEL_MAX_LINE_BYTES", DEFAULT_MODEL_MAX_LINE_BYTES, positive=True
            ),
            model_endpoints=env.get("CHATS_MODEL_ENDPOINTS", "").strip(),
            expose_worker_id=env.get("CHATS_EXPOSE_WORKER_ID", "") == "1",
            auth_mode=_choice(env, "CHATS_AUTH", AUTH_MODES),
            auth_header=env.get("CHATS_AUTH_HEADER", "").strip(),
            trusted_proxies=tuple(
                part.strip()
                for part in env.get("CHATS_TRUSTED_PROXIES", "").split(",")
                if part.strip()
            ),
            sign_in_ttl_s=_int(env, "CHATS_SESSION_TTL_S", DEFAULT_SIGN_IN_TTL_S),
            password_hash_profile=_choice(
                env, "CHATS_PASSWORD_HASH_PROFILE", PASSWORD_HASH_PROFILES
            ),
            sqlite_synchronous=_choice(env, "CHATS_SQLITE_SYNCHRONOUS", SQLITE_SYNCHRONOUS_LEVELS),
            listen_host=env.get("CHATS_LISTEN_HOST", "").strip() or "0.0.0.0",
            max_import_bytes=_int(
                env, "CHATS_MAX_IMPORT_BYTES", DEFAULT_MAX_IMPORT_BYTES, positive=True
            ),
            workers=_workers(env),
            storage=parse_storage(env.get("CHATS_STORAGE", "")),
            allowed_origins=_origins(env, "CHATS_ALLOWED_ORIGINS"),
            embedder=env.get("CHATS_EMBEDDER", "bundled").strip() or "bundled",
            embedder_model=env.get("CHATS_EMBEDDER_MODEL", "").strip(),
            embedder_api_key=env.get("CHATS_EMBEDDER_API_KEY", ""),
            temporary_chat_ttl_s=_int(
                env, "CHATS_TEMPORARY_CHAT_TTL_S", DEFAULT_TEMPORARY_CHAT_TTL_S, positive=True
            ),
            temporary_chat_grace_s=_float(
                env, "CHATS_TEMPORARY_CHAT_GRACE_S", DEFAULT_TEMPORARY_CHAT_GRACE_S, positive=True
            ),
        )


def web_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, lowercase, default port left out; else None.

    Two spellings of one origin compare equal: ``https://Chats.example:443/x`` and
    ``https://chats.example`` both give ``https://chats.example``.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        return None
    if ":" in host:
        host = f"[{host}]"
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def _origins(env: Mapping[str, str], key: str) -> tuple[str, ...]:
    """Comma-separated origins: each a scheme, a host and maybe a port, nothing more."""
    origins = []
    for raw in env.get(key, "").split(","):
        if not raw.strip():
            continue
        origin = web_origin(raw)
        rest = urlsplit(raw.strip())
        if origin is None or rest.path not in ("", "/") or rest.query or rest.fragment:
            raise ValueError(
                f"{key} holds {raw.strip()!r}: each entry is an origin such as "
                "https://chats.example.com or http://192.168.1.5:3000 (no path)"
            )
        origins.append(origin)
    return tuple(dict.fromkeys(origins))


def _workers(env: Mapping[str, str]) -> int:
    """Server processes: each keeps its tabs' UI state, so several must share it in Redis."""
    workers = _int(env, "CHATS_WORKERS", 1, positive=True)
    if workers > 1 and not env.get("REFLEX_REDIS_URL", ""):
        raise ValueError(
            f"CHATS_WORKERS={workers} needs REFLEX_REDIS_URL: without Redis each worker would "
            "keep its own copy of every tab's state, and a tab would lose it on reconnecting"
        )
    return workers


def _choice(env: Mapping[str, str], key: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first is the default when unset)."""
    raw = env.get(key, "").strip().lower()
    if not raw:
        return choices[0]
    if raw not in choices:
        raise ValueError(f"{key} must be one of {', '.join(choices)}; got {raw!r}")
    return raw


def _int(env: Mapping[str, str], key: str, default: int, *, positive: bool = False) -> int:
    raw = env.get(key, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from exc
    return _checked_positive(key, value) if positive else value


def _float(env: Mapping[str, str], key: str, default: float, *, positive: bool = False) -> float:
    raw = env.get(key, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{key} must be a number, got {raw!r}") from exc
    return _checked_positive(key, value) if positive else value


def _checked_positive(key: str, value: _N) -> _N:
    # A limit of 0 would fail every reply; "no limit" is not offered on purpose.
    if not value > 0:  # also rejects NaN
        raise ValueError(f"{key} must be positive, got {value!r}")
    return value
