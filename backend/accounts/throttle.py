"""Sign-in throttling: how many failures a window allows, and how long to wait after.

Failures are counted per **account** (the normalised username as typed, whether or not it
exists, so throttling itself reveals nothing) and per **address** (an IPv6 address counts as its
/64: one host usually owns the whole prefix and could otherwise rotate through it). Both
counts live in ``accounts.sqlite``, so every worker process and the CLI see the same numbers.

A sliding window: with ``limit`` failures inside the last ``window``, the next attempt waits
until the oldest of them leaves the window. A successful sign-in clears the account's
failures, not the address's (one shared address must not launder another account's guesses).
The per-account limit lets anyone lock an account out for up to ``FAILURE_WINDOW_S``; that is
the accepted price of stopping online guessing, and it ends by itself.

Pure functions: the store counts rows, this module decides.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence

FAILURE_WINDOW_S = 15 * 60
MAX_FAILURES_PER_ACCOUNT = 5
MAX_FAILURES_PER_ADDRESS = 20
IPV6_PREFIX = 64
ACCOUNT_SCOPE = "account"
ADDRESS_SCOPE = "address"


def address_key(address: str) -> str:
    """The throttling key of a peer address (an IPv6 address stands for its /64)."""
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return address.strip()  # not an IP (a test client, a unix socket): itself
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)


def retry_after_s(failures_ms: Sequence[int], limit: int, now_ms: int, window_s: int) -> int:
    """Seconds until one more attempt is allowed; 0 if it is allowed now.

    ``failures_ms`` are the failure times inside the window, in any order.
    """
    if len(failures_ms) < limit:
        return 0
    ordered = sorted(failures_ms)
    # Enough failures must leave the window for the count to drop below the limit.
    frees_at_ms = ordered[len(ordered) - limit] + window_s * 1000
    return max(1, math.ceil((frees_at_ms - now_ms) / 1000))
