"""A sandbox on loopback on a manual clock shared with placeflow's clients (real HTTP, virtual
time): waits advance the clock, so jobs, retries and URL lifetimes cost no wall time.

One clock for every thread makes one thread's wait pass for all: the poller's one-second sleep
would pass in the middle of the sender's prompt replays, 20 ms apart in real time. `FairClock`
lets a step that must not see that (`Rig.step`: a job POST and its replays) hold the other
threads' waits until it ends, as real time would hold them."""

from __future__ import annotations

import csv
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


class FairClock(ManualClock):
    """A ManualClock whose waits, from threads other than the one inside `alone()`, are held
    until it leaves: what the sender does in a few real milliseconds is not stretched by the
    poller's waits passing meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self._turn = threading.Condition()
        self._holder: int | None = None

    @contextmanager
    def alone(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._turn:
            while self._holder not in (None, me):
                self._turn.wait()
            self._holder = me
        try:
            yield
        finally:
            with self._turn:
                self._holder = None
                self._turn.notify_all()

    def sleep(self, seconds: float) -> None:
        with self._turn:
            while self._holder not in (None, threading.get_ident()):
                self._turn.wait()
            self.advance(seconds)


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

    def step(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A run's step wrapper: a job POST with its replays (submit) runs `alone` on the
        clock (see `FairClock`)."""
        if name != "submit" or not isinstance(self.clock, FairClock):
            return fn

        def alone(*args: Any, **kwargs: Any) -> Any:
            assert isinstance(self.clock, FairClock)
            with self.clock.alone():
                return fn(*args, **kwargs)

        return alone


@pytest.fixture
def rig() -> Iterator[Any]:
    """A function serving a sandbox (FaultConfig, settings as keywords); all stopped after."""
    started: list[Any] = []

    def serve(faults: FaultConfig | None = None, *, credits: int = 1_000_000, **config: Any) -> Rig:
        clock = FairClock()
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
