"""Where a request may go: the key only to the API's own origin, never to the result-file host;
a result-file download only through redirects from https to https on public hosts."""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from collections.abc import Callable

import httpx

from placeflow.api.errors import PlaceflowError, UnsafeRedirect
from placeflow.support.redact import SENSITIVE_HEADERS

_DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The context every client of the process verifies servers' certificates with: httpx's
    default (certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR), built once. Building one
    reads the whole bundle, 25-50 ms of CPU, and each client session holds two clients."""
    return httpx.create_ssl_context()


def context_for(url: str | httpx.URL) -> ssl.SSLContext:
    """The TLS context of a client whose requests all go to `url`'s origin: `tls_context` for
    https; for plain http (loopback, or a network said to be trusted), which never meets TLS, a
    context that trusts no certificate (it would refuse any https server), made without reading
    the CA bundle."""
    if httpx.URL(url).scheme.lower() == "https":
        return tls_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def origin(url: str | httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port) of `url`, the port made explicit: what "same origin" compares."""
    parsed = httpx.URL(url)
    scheme = parsed.scheme.lower()
    port = parsed.port if parsed.port is not None else _DEFAULT_PORTS.get(scheme, 0)
    return scheme, parsed.host.lower(), port


def key_only_to(allowed: tuple[str, str, int]) -> Callable[[httpx.Request], None]:
    """An httpx request hook for the API client: a request carrying X-API-Key must go to
    `allowed` (the base URL's origin), whatever built it; anything else is refused unsent."""

    def hook(request: httpx.Request) -> None:
        if "x-api-key" in request.headers and origin(request.url) != allowed:
            target = f"{request.url.scheme}://{request.url.netloc.decode()}"
            raise PlaceflowError(
                f"refusing to send the API key to {target}: it goes only to the base URL's origin"
            )

    return hook


def guard_no_credentials(request: httpx.Request) -> None:
    """An httpx request hook for the result-file client: refuse any request carrying a credential.

    The file client is built without credentials, so this fires only on a programming error;
    it is here so that such an error fails loudly instead of leaking the key.
    """
    carried = sorted(name for name in request.headers if name.lower() in SENSITIVE_HEADERS)
    if carried:
        raise PlaceflowError(
            f"refusing to send {', '.join(carried)} to {request.url.host}: result files are "
            "fetched without credentials"
        )


# --- where a result file may be fetched from ---------------------------------------------

MAX_REDIRECTS = 3
"""Hops a result-file download may follow: a CDN or object store needs one, rarely two."""
_LOCAL_NAMES = ("localhost",)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1, ``localhost`` and any ``*.localhost`` name (reserved for loopback)."""
    host = host.lower().rstrip(".")
    ip = _ip(host)
    if ip is not None:
        return ip.is_loopback
    return host in _LOCAL_NAMES or host.endswith(".localhost")


def _public_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def is_public_host(host: str, *, resolve: Callable[[str], list[str]] | None = None) -> bool:
    """Whether `host` (an address or a name, resolved) reaches only public addresses: never
    loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, where
    cloud metadata answers) or reserved ones. A name that does not resolve is not public."""
    host = host.lower().rstrip(".")
    ip = _ip(host)
    if ip is not None:
        return _public_ip(ip)
    if is_loopback_host(host):
        return False
    try:
        addresses = (resolve or _resolve)(host)
    except OSError:
        return False
    parsed = [_ip(a) for a in addresses]
    return bool(parsed) and all(p is not None and _public_ip(p) for p in parsed)


def _resolve(host: str) -> list[str]:
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})


def check_redirect(
    source: httpx.URL,
    target: httpx.URL,
    *,
    loopback_origin: bool,
    resolve: Callable[[str], list[str]] | None = None,
) -> None:
    """Refuse a redirect unless it is https to https and to a public host; a download that
    began on loopback (the sandbox) may also move between loopback addresses."""
    where = f"{target.scheme}://{target.host}"
    if loopback_origin and is_loopback_host(target.host) and target.scheme in ("http", "https"):
        return
    if source.scheme != "https" or target.scheme != "https":
        raise UnsafeRedirect(
            f"refusing a redirect from {source.scheme}:// to {where}: result files follow "
            "only https to https"
        )
    if not is_public_host(target.host, resolve=resolve):
        raise UnsafeRedirect(
            f"refusing a redirect to {where}: not a public host (loopback, private, "
            "link-local or unresolvable)"
        )
