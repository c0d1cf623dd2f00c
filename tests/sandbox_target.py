"""How the library's tests reach a sandbox served on loopback: its `Target`, and a served
sandbox of one key together with it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.fields import RateLimits
from placeflow.runner.target import Target
from placeflow.support.redact import Secret


def sandbox_target(base_url: str, key: str, limits: RateLimits | None = None) -> Target:
    """The Target of a sandbox at `base_url` for `key`: the paid tier's limits unless given."""
    return Target(
        base_url=base_url,
        api_key=Secret(key),
        label="test sandbox",
        limits=limits or RateLimits.for_tier("paid"),
    )


@contextmanager
def served(key: str, **config: Any) -> Iterator[tuple[Sandbox, Target]]:
    """A sandbox holding `key` (SandboxConfig overrides as keyword arguments), served on
    loopback for the block, and its Target."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=key),), **config))
    with sandbox.serve() as srv:
        yield sandbox, sandbox_target(srv.base_url, key)
