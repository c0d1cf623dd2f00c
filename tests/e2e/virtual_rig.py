"""A sandbox on loopback on a manual clock shared with placeflow's clients (real HTTP, virtual
time): waits advance the clock, so jobs, retries and URL lifetimes cost no wall time."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.retry import RetryPolicy
from placeflow.emulator import FaultConfig, KeySpec, ManualClock, Sandbox, SandboxConfig
from placeflow.fields import RateLimits
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

KEY = "sk_money_safe_key_9c9c"
QUICK = RetryPolicy(initial_backoff=0.5, max_backoff=4.0, jitter=0.0)
PATIENCE = RetryPolicy(max_attempts=6, initial_backoff=1.0, max_backoff=8.0, jitter=0.0)


@dataclass(frozen=True)
class VirtualTarget(Target):
    """A target whose clients share the sandbox's manual clock (waits advance it)."""

    clock: ManualClock = field(default_factory=ManualClock, compare=False)

    def client(
        self, *, timeout: float = 30.0, waiting: Callable[[float], None] | None = None
    ) -> PlaceApiClient:
        return PlaceApiClient(
            base_url=self.base_url,
            api_key=self.api_key.reveal(),
            limits=self.limits,
            clock=self.clock.now,
            wall_clock=self.clock.now,
            sleep=self.clock.sleep,
            retry=QUICK,
            accounting_retry=PATIENCE,
            timeout=timeout,
            waiting=waiting,
        )


@dataclass
class Rig:
    sandbox: Sandbox
    clock: ManualClock
    target: VirtualTarget

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    def key(self) -> dict[str, Any]:
        return dict(self.sandbox.stats()["keys"][KEY])

    def billed_credits(self) -> int:
        return int(self.key()["credits"]["charged"])

    def rows_billed_twice(self) -> int:
        return int(self.key()["billed"]["rows_billed_twice"])


@pytest.fixture
def rig() -> Iterator[Any]:
    """A function serving a sandbox (FaultConfig, settings as keywords); all stopped after."""
    started: list[Any] = []

    def serve(faults: FaultConfig | None = None, *, credits: int = 1_000_000, **config: Any) -> Rig:
        clock = ManualClock()
        sandbox = Sandbox(
            SandboxConfig(
                keys=(KeySpec(key=KEY, credits=credits),),
                clock=clock,
                faults=faults or FaultConfig(),
                **config,
            )
        )
        ctx = sandbox.serve()
        srv = ctx.__enter__()
        started.append((sandbox, ctx))
        target = VirtualTarget(
            base_url=srv.base_url, api_key=Secret(KEY), label="virtual sandbox",
            limits=RateLimits.for_tier("paid"), clock=clock,
        )  # fmt: skip
        return Rig(sandbox, clock, target)

    yield serve
    for sandbox, ctx in reversed(started):
        ctx.__exit__(None, None, None)
        assert not sandbox.backend.internal_errors


def write_places(path: Path, n: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "name", "address", "city", "country"])
        for i in range(n):
            writer.writerow([f"u{i}", f"Corner Shop {i}", f"{i} Elm Street", "Springfield", "USA"])
    return path
