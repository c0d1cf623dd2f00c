"""Fixtures: a sandbox in-process on a manual clock, and an httpx client mounted on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from placeflow.emulator import KeySpec, ManualClock, Sandbox, SandboxConfig

KEY = "sk_test_paid_key_0001"
FREE_KEY = "sk_test_free_key_0002"


class Harness:
    """A sandbox, its clock, and a raw httpx client that sends the test key by default."""

    def __init__(self, sandbox: Sandbox, clock: ManualClock) -> None:
        self.sandbox = sandbox
        self.clock = clock
        self.http = httpx.Client(
            transport=sandbox.transport(), base_url=sandbox.base_url, headers={"X-API-Key": KEY}
        )

    def post(self, path: str, json: Any = None, **kw: Any) -> httpx.Response:
        return self.http.post(path, json=json, **kw)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.http.get(path, **kw)

    def stats(self) -> dict[str, Any]:
        return self.sandbox.stats()

    def credits(self, key: str = KEY) -> dict[str, int]:
        return dict(self.sandbox.stats()["keys"][key]["credits"])

    def tick(self, seconds: float = 1.0) -> None:
        """Move sandbox time on (and out of the rate-limit windows)."""
        self.clock.advance(seconds)


MakeHarness = Callable[..., Harness]


@pytest.fixture
def make_harness() -> Iterator[MakeHarness]:
    made: list[Harness] = []

    def make(**overrides: Any) -> Harness:
        clock = ManualClock()
        keys = overrides.pop(
            "keys",
            (KeySpec(key=KEY, credits=100_000), KeySpec(key=FREE_KEY, tier="free", credits=1_000)),
        )
        h = Harness(Sandbox(SandboxConfig(keys=keys, clock=clock, **overrides)), clock)
        made.append(h)
        return h

    yield make
    for h in made:
        h.http.close()
        errors = h.sandbox.backend.internal_errors
        assert not errors, f"the sandbox failed internally:\n{errors[-1]}"


@pytest.fixture
def sb(make_harness: MakeHarness) -> Harness:
    """The default harness: paid and free keys, jobs at 1,000 rows/s, no faults."""
    return make_harness(rows_per_second=1_000.0)


def place(i: int = 0, **fields: Any) -> dict[str, Any]:
    """A valid place; `i` makes it distinct."""
    return {
        "id": f"p{i}",
        "poi_name": f"Cafe Number {i}",
        "street": f"{i} Main St",
        "city": "Springfield",
        "country": "US",
        **fields,
    }
