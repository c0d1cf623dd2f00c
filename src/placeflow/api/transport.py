"""Where a credential may go: only to the API's own origin, never to the result-file host."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from placeflow.api.errors import PlaceflowError
from placeflow.redact import SENSITIVE_HEADERS

_DEFAULT_PORTS = {"http": 80, "https": 443}


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
