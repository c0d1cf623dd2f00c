"""A sandbox served on 127.0.0.1 (API and files on two ports) on a manual clock, and a client of
it sharing that clock: real HTTP, virtual time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from placeflow.api.client import PlaceApiClient
from placeflow.api.retry import RetryPolicy
from placeflow.emulator import FaultConfig, KeySpec, ManualClock, Sandbox, SandboxConfig
from placeflow.fields import RateLimits

from .conftest import KEY, poi

QUICK = RetryPolicy(initial_backoff=0.5, max_backoff=4.0, jitter=0.0)


@dataclass
class Served:
    sandbox: Sandbox
    clock: ManualClock
    client: PlaceApiClient
    base_url: str
    files_url: str

    def stats(self) -> dict[str, Any]:
        return self.sandbox.stats()

    def key(self) -> dict[str, Any]:
        return dict(self.stats()["keys"][KEY])

    def count(self, route: str, status: int | None = None) -> int:
        by_status = self.stats()["requests"].get(route, {})
        if status is None:
            return int(sum(by_status.values()))
        return int(by_status.get(str(status), 0))


@contextmanager
def served(
    *, faults: FaultConfig | None = None, client: dict[str, Any] | None = None, **config: Any
) -> Iterator[Served]:
    """Serve a sandbox (settings as keywords, `faults` its FaultConfig) and yield a client."""
    clock = ManualClock()
    sandbox = Sandbox(
        SandboxConfig(
            keys=(KeySpec(key=KEY, credits=1_000_000),),
            clock=clock,
            faults=faults or FaultConfig(),
            **config,
        )
    )
    options: dict[str, Any] = {"retry": QUICK, "limits": RateLimits.for_tier("paid")}
    options.update(client or {})
    with (
        sandbox.serve() as srv,
        PlaceApiClient(
            base_url=srv.base_url,
            api_key=KEY,
            clock=clock.now,
            wall_clock=clock.now,
            sleep=clock.sleep,
            **options,
        ) as api,
    ):
        yield Served(sandbox, clock, api, srv.base_url, srv.files_url)
    errors = sandbox.backend.internal_errors
    assert not errors, f"the sandbox failed internally:\n{errors[-1]}"


def places(n: int, prefix: str = "r", **extra: Any) -> list[dict[str, Any]]:
    return [poi(i, id=f"{prefix}{i}", **extra) for i in range(n)]


Submit = Callable[[Served, int, str], Any]
