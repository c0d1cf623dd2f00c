"""Research fixtures: a sandbox served on loopback with a fast minute, a client sharing its key's
limits, places as a user's CSV has them, and what the sandbox itself saw."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.emulator.research import ResearchKnobs, research_knobs, research_stats
from placeflow.errors import RunStopped, exit_code
from placeflow.fields import RateLimits
from placeflow.pipeline.account import RunSummary
from placeflow.pipeline.research.fields import build_specs
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.reporting.summary import exit_code_for
from placeflow.runner.research import ResearchOptions, research
from placeflow.runner.target import Target
from placeflow.support.redact import Secret

KEY = "sk_research_paid_key_5c5c"
SCALE = 0.05
"""Rate windows at a twentieth: the sandbox's minute lasts 3 s, and the client knows it."""
FIELDS = ("cuisine:enum:italian|thai|mexican|other", "has_outdoor_seating:bool", "owner_person")


def places(n: int, start: int = 0) -> list[dict[str, Any]]:
    """Distinct, valid places as a user's CSV would have them."""
    return [
        {"id": f"u{i}", "name": f"Corner Cafe {i}", "address": f"{i} Elm Street",
         "city": "Springfield", "country": "USA"}
        for i in range(start, start + n)
    ]  # fmt: skip


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def spec(verify: bool = True, fields: tuple[str, ...] = FIELDS) -> ResearchSpec:
    return ResearchSpec(build_specs(fields), verify_identity=verify)


@dataclass
class Served:
    sandbox: Sandbox
    base_url: str

    def client(self) -> PlaceApiClient:
        limits = RateLimits.for_tier("paid", window_scale=SCALE)
        return PlaceApiClient(base_url=self.base_url, api_key=KEY, limits=limits)

    @property
    def knobs(self) -> ResearchKnobs:
        return research_knobs(self.sandbox.backend)

    def research(self) -> dict[str, Any]:
        return research_stats(self.sandbox.backend)

    def requests(self, route: str) -> int:
        return sum(self.sandbox.stats()["requests"].get(route, {}).values())

    def all_requests(self) -> int:
        counts = self.sandbox.stats()["requests"]
        return sum(sum(c.values()) for c in counts.values())

    def credits(self) -> dict[str, int]:
        return dict(self.sandbox.stats()["keys"][KEY]["credits"])

    def starved_after(self, answered: int, left: int = 5) -> Callable[[str, int], None]:
        """A research hook that leaves the key `left` credits once `answered` requests are
        answered: the next request is refused (402) part way through the run."""

        def starve(moment: str, sent: int) -> None:
            if moment == "answered" and sent == answered:
                self.sandbox.backend.set_available(KEY, left)

        return starve

    def target(self) -> Target:
        """This sandbox as a run's target: its key, at the key's limits, the windows scaled."""
        limits = RateLimits.for_tier("paid", window_scale=SCALE)
        return Target(base_url=self.base_url, api_key=Secret(KEY), label="sandbox", limits=limits)

    def run(
        self, csv_path: Path, db: Path, options: ResearchOptions, **kw: Any
    ) -> tuple[RunSummary, int]:
        """The research, in this process, against this sandbox: its summary and exit code."""
        return ended(
            lambda: research(
                [str(csv_path)], options, target=self.target(), db=db,
                sleep=kw.pop("sleep", lambda s: None),
                clock=kw.pop("clock", lambda: datetime.now(UTC)), **kw,
            )
        )  # fmt: skip


def ended(call: Callable[[], RunSummary]) -> tuple[RunSummary, int]:
    """A research's end as its command has it: the run's typed summary and the exit code (a
    run stopped as a run stops, refused or its credits ran out: its error's, from
    `errors.EXIT_CODES`, the summary its error carries; else its status's)."""
    try:
        summary = call()
    except RunStopped as exc:
        stopped = exc
    else:
        return summary, exit_code_for(summary.status)
    assert isinstance(stopped.summary, RunSummary), stopped
    return stopped.summary, exit_code(stopped) or 1


ServeSandbox = Callable[..., Served]


@pytest.fixture
def serve() -> Iterator[ServeSandbox]:
    """Serve sandboxes on loopback for the test; each must end without an internal error."""
    started: list[tuple[Sandbox, Any]] = []

    def start(credits: int = 1_000_000, **overrides: Any) -> Served:
        keys = (KeySpec(key=KEY, credits=credits),)
        sandbox = Sandbox(SandboxConfig(keys=keys, rate_window_scale=SCALE, **overrides))
        ctx = sandbox.serve()
        served = ctx.__enter__()
        started.append((sandbox, ctx))
        return Served(sandbox, served.base_url)

    yield start
    for sandbox, ctx in reversed(started):
        ctx.__exit__(None, None, None)
        assert not sandbox.backend.internal_errors, sandbox.backend.internal_errors[-1]
        stats = sandbox.stats()["keys"][KEY]
        assert stats["rate_limited"] == 0, "the client went over the key's rate limits"
