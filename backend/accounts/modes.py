"""``CHATS_AUTH``: how a tab learns who it is, and the checks each mode needs before serving.

* ``local`` (default): accounts in ``accounts.sqlite``, password sign-in
  (:class:`backend.accounts.Accounts`).
* ``header``: a reverse proxy that signed the person in names them in ``CHATS_AUTH_HEADER``.
  A header is only as trustworthy as whoever set it, so it is honoured only when the TCP peer
  of the request is in ``CHATS_TRUSTED_PROXIES`` (IP addresses or CIDR networks). Never from
  ``X-Forwarded-For``: a client writes that header itself. The peer must be the connection's
  own remote address.
* ``none``: the single local user (``CHATS_USER``), no sign-in. Anyone who reaches the port is
  that user, so the server must listen on a loopback address only.

Pure functions: no database, no I/O. :meth:`Accounts.identity_from_headers` provisions the
account once :func:`header_username` has accepted the request.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

from backend.config import Settings
from backend.errors import (
    ConfigurationError,
    LoopbackRequiredError,
    MissingIdentityHeaderError,
    UntrustedProxyError,
)

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def check_listen_address(host: str) -> str:
    """Return ``host`` if it is loopback-only; else raise LoopbackRequiredError.

    ``0.0.0.0`` and ``::`` listen on every interface and are refused; so is any other host
    name, which could resolve anywhere.
    """
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return host
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        raise LoopbackRequiredError(host) from None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not ip.is_loopback:
        raise LoopbackRequiredError(host)
    return host


def parse_trusted_proxies(entries: Iterable[str]) -> tuple[IpNetwork, ...]:
    """``CHATS_TRUSTED_PROXIES`` entries as networks (an address is a /32 or /128)."""
    networks: list[IpNetwork] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError as exc:
            raise ConfigurationError(
                "CHATS_TRUSTED_PROXIES",
                f"CHATS_TRUSTED_PROXIES holds {entry!r}, which is not an IP address or network",
            ) from exc
    return tuple(networks)


def is_trusted_proxy(peer_address: str, networks: Iterable[IpNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(peer_address.strip().strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # a dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d
    return any(ip.version == net.version and ip in net for net in networks)


def client_address(headers: Mapping[str, str], peer_address: str, settings: Settings) -> str:
    """The address to throttle and record for a request: the peer, or behind a trusted proxy
    the client it forwarded for.

    Behind a reverse proxy every request comes from the proxy, so throttling per address
    would lock everyone out together. When the peer is in ``CHATS_TRUSTED_PROXIES``, the
    ``X-Forwarded-For`` chain is read from the right (the hops our proxies appended) and the
    first address that is not a trusted proxy is the client; entries further left were
    written by the client and are never believed.
    """
    networks = parse_trusted_proxies(settings.trusted_proxies)
    if not networks or not is_trusted_proxy(peer_address, networks):
        return peer_address
    forwarded = [
        hop.strip()
        for key, value in headers.items()
        if key.lower() == "x-forwarded-for"
        for hop in value.split(",")
        if hop.strip()
    ]
    for hop in reversed(forwarded):
        if not is_trusted_proxy(hop, networks):
            return hop[:64]
    return forwarded[0][:64] if forwarded else peer_address


def header_username(headers: Mapping[str, str], peer_address: str, settings: Settings) -> str:
    """The identity a trusted proxy passed, as sent (not yet normalised).

    Raises UntrustedProxyError when the peer is not a configured proxy (checked first, so an
    untrusted client learns nothing about the header), MissingIdentityHeaderError when the
    header is absent or blank.
    """
    check_header_settings(settings)
    if not is_trusted_proxy(peer_address, parse_trusted_proxies(settings.trusted_proxies)):
        raise UntrustedProxyError(peer_address)
    wanted = settings.auth_header.lower()
    values = [value for key, value in headers.items() if key.lower() == wanted]
    value = values[0].strip() if len(values) == 1 else ""
    if not value:
        raise MissingIdentityHeaderError(settings.auth_header)
    return value


def check_header_settings(settings: Settings) -> None:
    if not settings.auth_header:
        raise ConfigurationError(
            "CHATS_AUTH_HEADER",
            "CHATS_AUTH=header needs CHATS_AUTH_HEADER: the header your proxy sets to the "
            "signed-in person (e.g. Remote-User, X-Forwarded-Email).",
        )
    if not settings.trusted_proxies:
        raise ConfigurationError(
            "CHATS_TRUSTED_PROXIES",
            "CHATS_AUTH=header needs CHATS_TRUSTED_PROXIES: the proxy's addresses "
            "(IPs or CIDRs, comma-separated); the header is ignored from anywhere else.",
        )
    parse_trusted_proxies(settings.trusted_proxies)


def check_startup(settings: Settings, listen_host: str) -> None:
    """Refuse to start with a configuration that would serve people unsafely.

    Call it once in the run command / app start, before serving; it raises a
    ConfigurationError whose text says what to change.
    """
    if settings.auth_mode == "none":
        check_listen_address(listen_host)
    elif settings.auth_mode == "header":
        check_header_settings(settings)
