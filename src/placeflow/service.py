"""Which service a run talks to: the real one (a key was given) or the embedded sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from placeflow.api.client import PlaceApiClient
from placeflow.api.limiter import RateLimiter, RateLimits
from placeflow.emulator import DEFAULT_API_KEY, Sandbox, SandboxConfig
from placeflow.redact import Secret


@dataclass(frozen=True)
class Target:
    """A service to talk to: where, with which key, and how to describe it to a person."""

    base_url: str
    api_key: Secret
    label: str
    limits: RateLimits

    def client(
        self, *, limiter: RateLimiter | None = None, timeout: float = 30.0
    ) -> PlaceApiClient:
        if limiter is not None:
            return PlaceApiClient(
                base_url=self.base_url,
                api_key=self.api_key.reveal(),
                limiter=limiter,
                timeout=timeout,
            )
        return PlaceApiClient(
            base_url=self.base_url,
            api_key=self.api_key.reveal(),
            limits=self.limits,
            timeout=timeout,
        )


@contextmanager
def embedded_sandbox(config: SandboxConfig | None = None) -> Iterator[Target]:
    """Serve a sandbox on free loopback ports for the length of the block."""
    sandbox = Sandbox(config or SandboxConfig())
    with sandbox.serve() as served:
        yield Target(
            base_url=served.base_url,
            api_key=Secret(DEFAULT_API_KEY),
            label=f"embedded sandbox at {served.base_url}",
            limits=RateLimits.for_tier("paid"),
        )


@contextmanager
def open_target(
    *, api_key: Secret | None, base_url: str | None, tier: str = "paid"
) -> Iterator[Target]:
    """The real service when a key is given, else an embedded sandbox."""
    if api_key is None:
        with embedded_sandbox() as target:
            yield target
        return
    if not base_url:
        raise ValueError("a key needs a base URL: set PLACEFLOW_BASE_URL")
    yield Target(
        base_url=base_url, api_key=api_key, label=base_url, limits=RateLimits.for_tier(tier)
    )
