"""Jobs over real loopback HTTP against the spec's other readings: short-lived and skewed result
URLs, etas wrong by 3x, a status the spec never names, jobs that stop moving or fail half way."""

from __future__ import annotations

from pathlib import Path

import pytest

from placeflow.api.client import JobSubmission
from placeflow.api.download import download_result
from placeflow.api.errors import ResultUnavailable
from placeflow.api.poller import JobPoller
from placeflow.emulator import FaultConfig

from .loopback_rig import Served, places, served


def submit_all(srv: Served, jobs: int, rows: int, prefix: str) -> list[JobSubmission]:
    return [
        srv.client.submit_enrich_job(places(rows, f"{prefix}{j}-"), idempotency_key=f"{prefix}{j}")
        for j in range(jobs)
    ]


def test_two_second_urls_are_tried_then_refreshed_and_used_at_once(tmp_path: Path) -> None:
    """URLs living 2 s, each job's file fetched 5 s after its poll: every file verified, two
    downloads per file at most (one refused as expired, one served), as the origin counts."""
    with served(url_ttl_seconds=2.0, rows_per_second=500.0) as srv:
        jobs = submit_all(srv, 4, 300, "ttl")
        verified = 0
        for status in JobPoller(srv.client, floor=1.0).iter_follow(jobs):
            srv.clock.advance(5.0)  # the file is fetched after its URL's lifetime
            verified += download_result(srv.client, status, tmp_path).lines
        downloads = srv.stats()["downloads"]
    assert verified == 4 * 300
    assert downloads["served"] == 4 and downloads["expired"] == 4
    assert downloads["total"] / 4 <= 2.0


@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_ten_minutes_of_clock_skew_do_not_stop_a_download(tmp_path: Path, skew: float) -> None:
    """With the service's clock 10 min ahead or behind, expires_at looks long past (or far
    off) here; the URL is tried anyway and served: one download per file, none refused."""
    with served(faults=FaultConfig(clock_skew_seconds=skew), url_ttl_seconds=60.0) as srv:
        jobs = submit_all(srv, 3, 50, "skew")
        for status in JobPoller(srv.client, floor=1.0).iter_follow(jobs):
            download_result(srv.client, status, tmp_path)
        downloads = srv.stats()["downloads"]
    assert (downloads["total"], downloads["served"], downloads["refused"]) == (3, 3, 0)


def test_a_file_refused_forever_ends_that_job_alone(tmp_path: Path) -> None:
    """A file origin that refuses one job's file: ResultUnavailable for it after three fresh
    URLs (four tries), while the other job's file is verified."""
    with served() as srv:
        jobs = submit_all(srv, 2, 20, "deny")
        srv.sandbox.backend.refuse_file(jobs[0].batch_id)
        finals = JobPoller(srv.client, floor=1.0).follow(jobs)
        with pytest.raises(ResultUnavailable, match="refuses this job's file"):
            download_result(srv.client, finals[jobs[0].batch_id], tmp_path)
        good = download_result(srv.client, finals[jobs[1].batch_id], tmp_path)
        downloads = srv.stats()["downloads"]
    assert good.lines == 20
    assert downloads["refused_forever"] == 4 and downloads["served"] == 1


@pytest.mark.parametrize("factor", [1 / 3, 1.0, 3.0])
def test_polls_stay_near_one_per_job_when_the_eta_is_off_by_three(factor: float) -> None:
    """Eight jobs, two running at once, etas true or 3x off either way: the poller learns the
    factor and the sandbox counts at most two polls beyond one per job."""
    with served(faults=FaultConfig(eta_factor=factor), rows_per_second=120.0) as srv:
        jobs = submit_all(srv, 8, 600, "eta")
        poller = JobPoller(srv.client, floor=1.0)
        finals = poller.follow(jobs)
        polls = srv.count("GET /v1/jobs/{batch_id}")
    assert {s.status for s in finals.values()} == {"completed"}
    assert polls == poller.polls <= 8 + 2
    assert poller.learner.factor == pytest.approx(factor, rel=0.2)


def test_no_job_is_polled_before_it_can_have_moved() -> None:
    """Whatever the eta says (here 20x too short), no job is polled twice within the time
    its remaining rows take at the fastest rate seen: at most three polls for a 40 s job."""
    with served(faults=FaultConfig(eta_factor=0.05), rows_per_second=100.0) as srv:
        jobs = submit_all(srv, 1, 4_000, "move")
        poller = JobPoller(srv.client, floor=1.0)
        poller.follow(jobs)
    assert poller.polls <= 3


def test_an_unnamed_status_between_running_and_completed_is_waited_out() -> None:
    """Jobs that show `finalizing` for 30 s after processing end completed, followed with few
    polls (backing off while the eta says 0), never treated as ended or stuck."""
    with served(faults=FaultConfig(finalizing_seconds=30.0), rows_per_second=200.0) as srv:
        jobs = submit_all(srv, 2, 400, "fin")
        poller = JobPoller(srv.client, floor=1.0, stuck_after=10.0)
        finals = poller.follow(jobs)
    assert {s.status for s in finals.values()} == {"completed"}
    assert not poller.stuck and poller.polls <= 12


@pytest.mark.parametrize("late", [2, 9])
def test_a_job_whose_file_shows_after_its_status_is_read_again_for_it(
    tmp_path: Path, late: int
) -> None:
    """Jobs that show `completed` with `results: null` to their first reads after they end
    (the files follow the status): read again, backing off, until the file shows (late=2),
    then verified; or handed on without one after FILES_AFTER more reads (late=9), each job
    read 1 + FILES_AFTER times after it ended, as the sandbox counts."""
    from placeflow.api.poller import FILES_AFTER

    with served(faults=FaultConfig(results_late_reads=late), rows_per_second=200.0) as srv:
        jobs = submit_all(srv, 2, 100, f"late{late}")
        finals = JobPoller(srv.client, floor=1.0).follow(jobs)
        reads = {j.batch_id: srv.sandbox.backend.jobs[j.batch_id].reads_ended for j in jobs}
        if late <= FILES_AFTER:
            assert (
                sum(download_result(srv.client, s, tmp_path).lines for s in finals.values()) == 200
            )
    assert {s.status for s in finals.values()} == {"completed"}
    assert all(s.files_pending == (late > FILES_AFTER) for s in finals.values())
    assert set(reads.values()) == {min(late + 1, 1 + FILES_AFTER)}


def test_a_result_split_across_files_is_fetched_file_by_file_as_one(tmp_path: Path) -> None:
    """`result_parts=3`: each job lists three files (consecutive lines, each its own gzip
    stream, URL and sha256); each is verified and the three kept as one file holding every
    line in order, each part's first download refused as expired and fetched afresh."""
    import gzip
    import json

    faults = FaultConfig(result_parts=3, expire_url_rate=1.0)
    with served(faults=faults, rows_per_second=500.0) as srv:
        jobs = submit_all(srv, 2, 100, "split")
        finals = JobPoller(srv.client, floor=1.0).follow(jobs)
        got = {b: download_result(srv.client, s, tmp_path) for b, s in finals.items()}
        downloads = srv.stats()["downloads"]
    assert {len(s.results.files) for s in finals.values() if s.results} == {3}
    for job in jobs:
        lines = gzip.decompress(got[job.batch_id].path.read_bytes()).splitlines()
        ids = [json.loads(line)["id"] for line in lines]
        assert ids == [f"split{jobs.index(job)}-{i}" for i in range(100)]
    assert downloads["served"] == 6 and downloads["expired"] >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{j.batch_id}.jsonl.gz" for j in jobs
    )


def test_a_job_whose_progress_stops_is_cancelled_and_its_rows_kept(tmp_path: Path) -> None:
    """A job that stays running forever (stalled at half) is found stuck from its progress
    (not the hour-long timeout), cancelled with DELETE, and its processed rows downloaded;
    the other job completes."""
    with served(rows_per_second=100.0) as srv:
        srv.sandbox.inject("JOB", "stall")
        jobs = submit_all(srv, 2, 500, "stuck")
        poller = JobPoller(srv.client, floor=1.0, stuck_after=60.0, timeout=3_600.0)
        finals = poller.follow(jobs)
        stuck_id = jobs[0].batch_id
        part = download_result(srv.client, finals[stuck_id], tmp_path)
        elapsed = srv.clock.now() - 1_790_000_000.0
        deletes = srv.count("DELETE /v1/jobs/{batch_id}")
    assert set(poller.stuck) == {stuck_id} and finals[stuck_id].status == "cancelled"
    assert finals[jobs[1].batch_id].status == "completed"
    assert part.lines == 250 and deletes == 1
    assert elapsed < 300


def test_a_job_failing_half_way_publishes_its_processed_rows(tmp_path: Path) -> None:
    """A job that fails half way ends failed with its processed rows billed and published:
    the file is downloadable, and what was billed is exactly what is in it."""
    with served(faults=FaultConfig(job_fail_midway_rate=1.0), rows_per_second=100.0) as srv:
        jobs = submit_all(srv, 1, 400, "half")
        final = JobPoller(srv.client, floor=1.0).follow(jobs)[jobs[0].batch_id]
        part = download_result(srv.client, final, tmp_path)
        key = srv.key()
    assert final.status == "failed" and final.error_code == "EXTERNAL_API_ERROR"
    assert part.lines == 200
    assert key["billed"]["rows"] == key["credits"]["charged"] <= 200
    assert key["credits"]["held"] == 0 and key["billed"]["rows_billed_twice"] == 0


def test_jobs_forgotten_after_their_retention_answer_404_and_are_named_unknown() -> None:
    """`job_retention_seconds=60`: an hour after they ended, the jobs' polls answer 404; the
    poller names them unknown after UNKNOWN_AFTER answers each, raising nothing, and a replay
    of a forgotten job's Idempotency-Key creates a new job (the sandbox's own count)."""
    from placeflow.api.poller import UNKNOWN_AFTER

    with served(faults=FaultConfig(job_retention_seconds=60.0)) as srv:
        jobs = submit_all(srv, 2, 10, "kept")
        ended = JobPoller(srv.client, floor=1.0).follow(jobs)
        assert {s.status for s in ended.values()} == {"completed"}
        srv.clock.advance(3600.0)
        later = JobPoller(srv.client, floor=1.0)
        assert later.follow(jobs) == {}
        assert set(later.unknown) == {j.batch_id for j in jobs}
        assert later.polls == 2 * UNKNOWN_AFTER
        replayed = srv.client.submit_enrich_job(places(10, "kept0-"), idempotency_key="kept0")
        stats = srv.stats()
    assert replayed.batch_id != jobs[0].batch_id and not replayed.replayed
    assert stats["jobs"]["created"] == 3
    assert stats["requests"]["GET /v1/jobs/{batch_id}"]["404"] == 2 * UNKNOWN_AFTER
