"""Fixtures for the client tests: virtual time, scripted mock servers, and sandbox rigs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.retry import RetryPolicy
from placeflow.emulator import KeySpec, ManualClock, Sandbox, SandboxConfig
from placeflow.fields import RateLimits

KEY = "sk_live_test_secret_key_9f3a"
"""A key whose value must never appear anywhere but the X-API-Key header."""
BASE = "https://api.places.test"
FAST_RETRY = RetryPolicy(max_attempts=5, initial_backoff=0.5, max_backoff=8.0, jitter=0.0)


class FakeTime:
    """A clock that only moves when slept on: `sleeps` records every wait."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)


Reply = httpx.Response | Exception
Handler = Callable[[httpx.Request], Reply]


@dataclass
class Script:
    """A mock server that answers each request with the next scripted reply (the last repeats)."""

    replies: list[Reply | Handler]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if callable(reply) and not isinstance(reply, httpx.Response):
            reply = reply(request)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def bodies(self) -> list[bytes]:
        return [r.content for r in self.requests]


def js(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, content=json.dumps(body).encode(), headers=headers or {})


def mock_client(
    script: Script, time: FakeTime, *, retry: RetryPolicy = FAST_RETRY, **kwargs: Any
) -> PlaceApiClient:
    return PlaceApiClient(
        base_url=BASE,
        api_key=KEY,
        transport=httpx.MockTransport(script),
        retry=retry,
        clock=time.clock,
        wall_clock=time.clock,
        sleep=time.sleep,
        rand=lambda: 0.0,
        **kwargs,
    )


def poi(i: int = 0, **extra: Any) -> dict[str, Any]:
    return {"id": f"r{i}", "poi_name": f"Cafe {i}", "city": "Lyon", "country": "FR", **extra}


VALIDATE_OK = {"success": True, "existence_confidence": 0.9, "request_id": "req_1"}
JOB_SUBMITTED = {
    "batch_id": "job_1",
    "type": "enrich",
    "status": "queued",
    "created_at": "2026-01-01T00:00:00Z",
    "total_items": 1,
    "eta_seconds": 5,
    "eta_completion_at": "2026-01-01T00:00:05Z",
}


@dataclass
class Rig:
    """A sandbox on a manual clock and a client mounted on it in-process, sharing that clock."""

    sandbox: Sandbox
    clock: ManualClock
    client: PlaceApiClient

    def stats(self) -> dict[str, Any]:
        return self.sandbox.stats()

    def key_stats(self) -> dict[str, Any]:
        return dict(self.sandbox.stats()["keys"][KEY])

    def count(self, route: str, status: int | None = None) -> int:
        by_status = self.stats()["requests"].get(route, {})
        if status is None:
            return sum(by_status.values())
        return int(by_status.get(str(status), 0))


MakeRig = Callable[..., Rig]


@pytest.fixture
def make_rig() -> Iterator[MakeRig]:
    """Build a `Rig`; sandbox settings and client settings are keyword arguments."""
    made: list[Rig] = []

    def make(
        *,
        tier: str = "paid",
        credits: int = 100_000,
        retry: RetryPolicy = FAST_RETRY,
        limits: RateLimits | None = None,
        client_kwargs: dict[str, Any] | None = None,
        **config: Any,
    ) -> Rig:
        clock = ManualClock()
        keys = (KeySpec(key=KEY, tier=tier, credits=credits),)
        sandbox = Sandbox(SandboxConfig(keys=keys, clock=clock, **config))
        scale = config.get("rate_window_scale", 1.0)
        client = PlaceApiClient(
            base_url=sandbox.base_url,
            api_key=KEY,
            limits=limits or RateLimits.for_tier(tier, window_scale=scale),
            retry=retry,
            transport=sandbox.transport(),
            clock=clock.now,
            wall_clock=clock.now,
            sleep=clock.sleep,
            **(client_kwargs or {}),
        )
        rig = Rig(sandbox, clock, client)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.client.close()
