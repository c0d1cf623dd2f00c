"""The client over real loopback HTTP, the sandbox serving the API and the files on two ports."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.download import download_result
from placeflow.api.errors import OutcomeUnknown
from placeflow.api.limiter import RateLimiter
from placeflow.api.poller import JobPoller
from placeflow.api.retry import RetryPolicy
from placeflow.emulator import FaultConfig, KeySpec, Sandbox, SandboxConfig
from placeflow.fields import RateLimits

from .conftest import KEY, poi

QUICK = RetryPolicy(initial_backoff=0.05, max_backoff=0.5, jitter=0.0)


def rows(n: int) -> list[dict[str, Any]]:
    return [poi(i) for i in range(n)]


@pytest.fixture
def served() -> Iterator[tuple[Sandbox, PlaceApiClient]]:
    """A sandbox on loopback with a 0.6 s 'slow' fault, and a client with a 0.3 s timeout."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),), faults=FaultConfig(slow_seconds=0.6)))
    with (
        sandbox.serve() as srv,
        PlaceApiClient(base_url=srv.base_url, api_key=KEY, timeout=0.3, retry=QUICK) as client,
    ):
        yield sandbox, client


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether `condition` holds within `timeout` seconds (asked every 10 ms): a bounded wait on
    what the sandbox observed, not a sleep aimed at a moment."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def count(sandbox: Sandbox, route: str, status: str | None = None) -> int:
    by_status = sandbox.stats()["requests"].get(route, {})
    return int(sum(by_status.values()) if status is None else by_status.get(status, 0))


@pytest.mark.slow  # real-time windows: parallel workers loading the machine make arrivals lag
def test_concurrent_tasks_sharing_a_limiter_stay_within_both_windows() -> None:
    """110 requests from 8 threads on two clients of one key: no 429, peaks within 10/s, 100/min.

    Windows are scaled to a tenth (100 ms, 6 s) with 150 ms of slack: client and server
    threads share one process on two busy cores here, and an arrival can lag its send by
    over 100 ms (100 ms of slack failed once in CI). The slack is absolute, so a lag must pass
    150 ms to matter whatever the scale; the minute window sets the test's length."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),), rate_window_scale=0.1))
    limiter = RateLimiter(RateLimits.for_tier("paid", window_scale=0.1, min_slack=0.15))
    with sandbox.serve() as srv:
        clients = [
            PlaceApiClient(base_url=srv.base_url, api_key=KEY, limiter=limiter, timeout=5.0)
            for _ in range(2)
        ]
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda i: clients[i % 2].validate(poi(i)), range(110)))
        for client in clients:
            client.close()
    key = sandbox.stats()["keys"][KEY]
    assert len(results) == 110 == count(sandbox, "POST /v1/validate", "200")
    assert key["rate_limited"] == 0
    assert key["peak_per_second"] <= 10
    assert key["peak_per_minute"] == 100  # the minute window was reached, never passed


def test_slow_poll_times_out_and_is_retried(served: tuple[Sandbox, PlaceApiClient]) -> None:
    """A poll slower than the timeout is abandoned and asked again; the retry answers."""
    sandbox, client = served
    job = client.submit_validate_job(rows(5))
    sandbox.inject("GET /v1/jobs/{batch_id}", "slow")
    assert client.job_status(job.batch_id).batch_id == job.batch_id
    assert eventually(lambda: count(sandbox, "GET /v1/jobs/{batch_id}") == 2)


def test_slow_validate_is_not_retried_and_was_billed(
    served: tuple[Sandbox, PlaceApiClient],
) -> None:
    """A validate that timed out may have been processed: OutcomeUnknown, and indeed billed."""
    sandbox, client = served
    sandbox.inject("POST /v1/validate", "slow")
    with pytest.raises(OutcomeUnknown):
        client.validate(poi(1))
    assert eventually(lambda: sandbox.stats()["keys"][KEY]["credits"]["charged"] == 1)
    assert count(sandbox, "POST /v1/validate") == 1


def test_dropped_connections_replay_and_recover(served: tuple[Sandbox, PlaceApiClient]) -> None:
    """A closed connection after a submission replays the job; a dropped poll is asked again."""
    sandbox, client = served
    sandbox.inject("POST /v1/jobs/enrich", "drop_response")
    submission = client.submit_enrich_job(rows(10), idempotency_key="loop-1")
    sandbox.inject("GET /v1/jobs/{batch_id}", "drop_request")
    client.job_status(submission.batch_id)
    stats = sandbox.stats()
    assert submission.replayed and stats["jobs"]["created"] == 1
    assert stats["idempotent_replays"] == 1 and stats["duplicate_submissions"] == 0
    assert count(sandbox, "GET /v1/jobs/{batch_id}") == 2


def test_full_job_over_two_origins(served: tuple[Sandbox, PlaceApiClient], tmp_path: Path) -> None:
    """Submit, poll, download from the file port through one truncation: verified, no key sent."""
    sandbox, client = served
    job = client.submit_enrich_job(rows(40))
    status = JobPoller(client, floor=0.05, timeout=10.0).wait(job)
    sandbox.inject("GET /files", "truncate")
    verified = download_result(client, status, tmp_path)
    assert verified.lines == 40
    downloads = sandbox.stats()["downloads"]
    assert (downloads["total"], downloads["truncated"], downloads["with_api_key"]) == (2, 1, 0)
    assert count(sandbox, "POST /v1/jobs/enrich") == 1
