"""Jobs end to end in-process: eta-driven polling, failures, timeouts and verified downloads."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from placeflow.api.client import PlaceApiClient
from placeflow.api.download import download_result
from placeflow.api.errors import JobFailed, JobTimedOut
from placeflow.api.poller import JobPoller
from placeflow.emulator import FaultConfig

from .conftest import KEY, MakeRig, Rig, poi


def rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [poi(i) for i in range(start, start + n)]


def submit(rig: Rig, n: int, key: str) -> Any:
    return rig.client.submit_enrich_job(rows(n), idempotency_key=key)


def test_eta_driven_polling_needs_about_one_poll_per_job(make_rig: MakeRig) -> None:
    """Three jobs (two run at once) each finish after one poll timed by eta; never re-POSTed."""
    rig = make_rig(rows_per_second=10.0, max_running_jobs=2)
    jobs = [submit(rig, 50, f"c{i}") for i in range(3)]
    poller = JobPoller(rig.client, floor=1.0, ceiling=120.0, jitter=0.1)
    finals = poller.follow(jobs)
    assert {s.status for s in finals.values()} == {"completed"}
    assert poller.polls <= 4
    assert rig.count("GET /v1/jobs/{batch_id}") == poller.polls
    assert rig.count("POST /v1/jobs/enrich") == 3


def test_failed_job_raises_job_failed_and_charges_nothing(make_rig: MakeRig) -> None:
    """A job the sandbox fails raises JobFailed with its batch_id; its hold is released."""
    rig = make_rig(rows_per_second=20.0)
    rig.sandbox.inject("JOB", "fail")
    job = submit(rig, 40, "f0")
    with pytest.raises(JobFailed) as info:
        JobPoller(rig.client).wait(job)
    assert info.value.batch_id == job.batch_id and info.value.error_code
    credits = rig.key_stats()["credits"]
    assert (credits["held"], credits["charged"], credits["released"]) == (0, 0, 40)


def test_never_finishing_job_is_cancelled_at_the_timeout(make_rig: MakeRig) -> None:
    """A stalled job is DELETEd when the timeout runs out; processed rows billed, rest released."""
    rig = make_rig(rows_per_second=10.0)
    rig.sandbox.inject("JOB", "stall")
    job = submit(rig, 100, "s0")
    poller = JobPoller(rig.client, floor=2.0, ceiling=60.0, timeout=600.0)
    with pytest.raises(JobTimedOut) as info:
        poller.follow([job])
    assert info.value.cancelled and info.value.batch_id == job.batch_id
    assert rig.stats()["jobs"]["by_status"] == {"cancelled": 1}
    assert rig.count("DELETE /v1/jobs/{batch_id}", 200) == 1
    assert poller.polls <= 20  # backed off to the ceiling; a fixed 2 s interval would be 300
    credits = rig.key_stats()["credits"]
    assert credits["held"] == 0 and credits["charged"] + credits["released"] == 100


def test_download_is_verified_and_never_carries_the_key(make_rig: MakeRig, tmp_path: Path) -> None:
    """The result file is verified line for line, and the file host never saw the key."""
    rig = make_rig()
    job = submit(rig, 25, "d0")
    status = JobPoller(rig.client).wait(job)
    verified = download_result(rig.client, status, tmp_path)
    with gzip.open(verified.path, "rt") as f:
        ids = [json.loads(line)["id"] for line in f]
    assert ids == [f"r{i}" for i in range(25)]
    downloads = rig.stats()["downloads"]
    assert (downloads["served"], downloads["with_api_key"]) == (1, 0)


@pytest.mark.parametrize("fault", ["truncate", "corrupt"])
def test_mangled_download_is_fetched_again(make_rig: MakeRig, tmp_path: Path, fault: str) -> None:
    """A truncated or corrupted download fails verification and is fetched again, once."""
    rig = make_rig()
    status = JobPoller(rig.client).wait(submit(rig, 30, "m0"))
    rig.sandbox.inject("GET /files", fault)
    verified = download_result(rig.client, status, tmp_path)
    assert verified.lines == 30
    downloads = rig.stats()["downloads"]
    assert (
        downloads["total"] == 2 and downloads[f"{fault}d" if fault == "truncate" else "corrupted"]
    )
    assert downloads["with_api_key"] == 0


def test_expired_url_is_tried_once_then_replaced_and_used_at_once(
    make_rig: MakeRig, tmp_path: Path
) -> None:
    """A status older than the URL's lifetime: the URL is tried (refused), one poll, one good
    download: two downloads for the file, as the sandbox counts them."""
    rig = make_rig(url_ttl_seconds=60.0)
    status = JobPoller(rig.client).wait(submit(rig, 10, "e0"))
    polls_before = rig.count("GET /v1/jobs/{batch_id}")
    rig.clock.advance(120)
    download_result(rig.client, status, tmp_path)
    assert rig.count("GET /v1/jobs/{batch_id}") == polls_before + 1
    downloads = rig.stats()["downloads"]
    assert (downloads["total"], downloads["expired"], downloads["served"]) == (2, 1, 1)


def test_refused_url_gets_a_fresh_one(make_rig: MakeRig, tmp_path: Path) -> None:
    """A client whose clock lags tries an expired URL; the 403 leads to a fresh URL that works."""
    rig = make_rig(url_ttl_seconds=60.0)
    lagging = PlaceApiClient(
        base_url=rig.sandbox.base_url,
        api_key=KEY,
        transport=rig.sandbox.transport(),
        clock=rig.clock.now,
        wall_clock=lambda: rig.clock.now() - 3600,
        sleep=rig.clock.sleep,
    )
    status = JobPoller(lagging).wait(submit(rig, 10, "r0"))
    rig.clock.advance(120)
    assert download_result(lagging, status, tmp_path).lines == 10
    downloads = rig.stats()["downloads"]
    assert (downloads["expired"], downloads["served"], downloads["with_api_key"]) == (1, 1, 0)


def test_cancelled_job_downloads_its_processed_rows(make_rig: MakeRig, tmp_path: Path) -> None:
    """A job cancelled half way keeps its processed rows; their file verifies against that count."""
    rig = make_rig(rows_per_second=10.0)
    job = submit(rig, 100, "x0")
    rig.clock.advance(4.0)
    rig.client.cancel_job(job.batch_id)
    status = rig.client.job_status(job.batch_id)
    assert status.status == "cancelled" and status.results is not None
    verified = download_result(rig.client, status, tmp_path)
    assert verified.lines == status.results.total_items == 40


def test_chaos_run_pays_once_per_chunk_and_verifies_every_file(
    make_rig: MakeRig, tmp_path: Path
) -> None:
    """Under random faults each chunk becomes one job, every file verifies, no key reaches files."""
    faults = FaultConfig(
        seed=7,
        error_500_rate=0.1,
        error_503_rate=0.05,
        extra_429_rate=0.1,
        drop_request_rate=0.05,
        drop_response_rate=0.1,
        truncate_download_rate=0.3,
        corrupt_download_rate=0.2,
    )
    rig = make_rig(rows_per_second=25.0, faults=faults)
    chunks = [rows(20, start=20 * i) for i in range(8)]
    jobs = [
        rig.client.submit_validate_job(c, idempotency_key=f"chaos-{i}")
        for i, c in enumerate(chunks)
    ]
    finals = JobPoller(rig.client).follow(jobs)
    for status in finals.values():
        assert download_result(rig.client, status, tmp_path).lines == 20
    stats = rig.stats()
    assert stats["jobs"]["created"] == 8 and stats["duplicate_submissions"] == 0
    assert rig.key_stats()["credits"]["held_total"] == 160
    assert rig.key_stats()["peak_per_second"] <= 10
    assert stats["downloads"]["with_api_key"] == 0
    assert stats["downloads"]["truncated"] + stats["downloads"]["corrupted"] > 0
    failures = sum(
        n for route in stats["requests"].values() for code, n in route.items() if code != "200"
    )
    assert failures > 0  # the faults really struck
