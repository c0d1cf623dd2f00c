"""The poller's schedule: eta-driven, clamped, jittered, backing off, and cancelling on timeout."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from placeflow.api.errors import JobFailed, JobTimedOut
from placeflow.api.jobref import PendingJob
from placeflow.api.poller import JobPoller
from placeflow.api.retry import RetryPolicy

from .conftest import JOB_SUBMITTED, FakeTime, Script, js, mock_client


def status(batch_id: str, state: str, eta: int | None = 0, processed: int = 0) -> dict[str, Any]:
    return {
        "batch_id": batch_id,
        "status": state,
        "created_at": "2026-01-01T00:00:00Z",
        "total_items": 100,
        "eta_seconds": eta,
        "progress": {"processed": processed, "succeeded": processed, "failed": 0},
        "error": "upstream down" if state == "failed" else None,
        "error_code": "EXTERNAL_API_ERROR" if state == "failed" else None,
    }


def poller(script: Script, time: FakeTime, **kwargs: Any) -> JobPoller:
    options: dict[str, Any] = {"floor": 1.0, "ceiling": 30.0, "jitter": 0.0}
    options.update(kwargs)
    return JobPoller(mock_client(script, time), **options)


def test_delay_follows_eta_within_floor_and_ceiling() -> None:
    """The next poll is the eta, raised to the floor and cut to the ceiling."""
    p = poller(Script([]), FakeTime())
    assert p.next_delay(eta=12, previous=None) == 12.0
    assert p.next_delay(eta=0, previous=None) == 1.0
    assert p.next_delay(eta=3600, previous=None) == 30.0


def test_jitter_adds_up_to_its_fraction_and_never_more_than_its_cap() -> None:
    """With jitter 0.2 and the random draw at its top, the wait grows by 20%, but by no more
    than max_jitter seconds: a long job is not looked at seconds after it ended."""
    p = JobPoller(
        mock_client(Script([]), FakeTime()),
        floor=1,
        ceiling=60,
        jitter=0.2,
        max_jitter=0.5,
        rand=lambda: 1.0,
    )
    assert p.next_delay(eta=2, previous=None) == pytest.approx(2.4)
    assert p.next_delay(eta=40, previous=None) == pytest.approx(40.5)


def test_a_job_submitted_earlier_is_polled_at_its_remaining_eta() -> None:
    """A PendingJob is polled when its remaining eta runs out, or at once if that is past."""
    time = FakeTime()
    script = Script([lambda r: js(200, status(r.url.path.rsplit("/", 1)[-1], "completed"))])
    p = poller(script, time)
    start = time.now
    ended = list(p.iter_follow([PendingJob("job_1", 7.0), PendingJob("job_2", -3.0)]))
    assert [s.batch_id for s in ended] == ["job_2", "job_1"] and p.polls == 2
    assert time.now - start == pytest.approx(7.0)
    assert [r.url.path for r in script.requests] == ["/v1/jobs/job_2", "/v1/jobs/job_1"]


def test_no_eta_or_no_progress_doubles_the_wait() -> None:
    """Without an eta, or while a running job makes no progress, the wait doubles."""
    p = poller(Script([]), FakeTime())
    assert p.next_delay(eta=None, previous=4.0) == 8.0
    assert p.next_delay(eta=1, previous=4.0, stalled=True) == 8.0


def test_first_poll_waits_for_the_submission_eta_and_never_posts() -> None:
    """A job submitted with eta 5 is polled once, five seconds later, with GET only."""
    time = FakeTime()
    script = Script([js(200, JOB_SUBMITTED), js(200, status("job_1", "completed"))])
    p = poller(script, time)
    submission = p.client.submit_enrich_job([{"poi_name": "A"}])
    start = time.now
    final = p.wait(submission)
    assert final.status == "completed" and p.polls == 1
    assert time.now - start == pytest.approx(5.0)
    assert [r.method for r in script.requests] == ["POST", "GET"]


def test_many_jobs_share_one_loop_in_due_order() -> None:
    """Three jobs are polled in the order their etas fall due, each until it ends."""
    time = FakeTime(0.0)
    etas = {"a": 9, "b": 3, "c": 6}
    order: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        batch_id = request.url.path.rsplit("/", 1)[1]
        order.append(batch_id)
        done = time.now >= etas[batch_id]
        return js(200, status(batch_id, "completed" if done else "running", eta=etas[batch_id]))

    p = poller(Script([answer]), time)
    finals = p.follow(["a", "b", "c"])
    assert set(finals) == {"a", "b", "c"}
    assert order[:3] == ["a", "b", "c"]  # first round: all due now
    assert order[3:] == ["b", "c", "a"]  # then each once, when its eta is up
    assert p.polls == 6


def test_failed_job_raises_job_failed_with_batch_id() -> None:
    """wait() on a job that ends failed raises JobFailed with its batch_id and error_code."""
    p = poller(Script([js(200, status("job_9", "failed"))]), FakeTime())
    with pytest.raises(JobFailed) as info:
        p.wait("job_9")
    assert info.value.batch_id == "job_9" and info.value.error_code == "EXTERNAL_API_ERROR"
    assert "new Idempotency-Key" in str(info.value)


def test_timeout_cancels_unfinished_jobs_with_delete() -> None:
    """Past the timeout the unfinished job is DELETEd and JobTimedOut says it was cancelled."""
    time = FakeTime(0.0)
    deleted = {"batch_id": "s", "status": "cancelled", "cancelled": True}

    def answer(request: httpx.Request) -> httpx.Response:
        batch_id = request.url.path.rsplit("/", 1)[1]
        if request.method == "DELETE":
            return js(200, deleted)
        if batch_id == "done":
            return js(200, status("done", "completed"))
        return js(200, status("s", "running", eta=1, processed=50))

    script = Script([answer])
    p = poller(script, time, timeout=100.0)
    with pytest.raises(JobTimedOut) as info:
        p.follow(["s", "done"])
    error = info.value
    assert error.batch_ids == ("s",) and error.cancelled
    assert set(error.finished) == {"done"}
    assert "cancelled them with DELETE" in str(error)
    assert [r.method for r in script.requests].count("DELETE") == 1
    assert time.now == pytest.approx(100.0)
    # A stalled job backs off: 1, 2, 4, ... so far fewer than 100 polls in 100 s.
    assert p.polls <= 10


def test_transient_poll_failure_is_rescheduled_not_fatal() -> None:
    """A poll that fails even after the client's retries is tried again at the next due time."""
    time = FakeTime()
    script = Script(
        [js(503, {"error": "x"}), js(503, {"error": "x"}), js(200, status("j", "completed"))]
    )
    p = JobPoller(mock_client(script, time, retry=RetryPolicy.none()), floor=1, jitter=0)
    assert p.wait("j").status == "completed"
    assert p.polls == 3


def test_settings_are_checked() -> None:
    """A floor above the ceiling, or a non-positive timeout, is refused."""
    client = mock_client(Script([]), FakeTime())
    with pytest.raises(ValueError, match="floor"):
        JobPoller(client, floor=10, ceiling=5)
    with pytest.raises(ValueError, match="timeout"):
        JobPoller(client, timeout=0)


def test_timeout_without_cancelling_says_the_jobs_still_run() -> None:
    """With cancel_on_timeout=False nothing is DELETEd and JobTimedOut says so."""
    script = Script([js(200, status("s", "running", eta=5, processed=10))])
    p = poller(script, FakeTime(0.0), timeout=20.0, cancel_on_timeout=False)
    with pytest.raises(JobTimedOut) as info:
        p.wait("s")
    assert not info.value.cancelled and info.value.not_cancelled == ("s",)
    assert "DELETE any still running" in str(info.value)
    assert {r.method for r in script.requests} == {"GET"}


def test_until_the_etas_are_learned_one_long_job_at_a_time_is_probed_early() -> None:
    """Two long jobs and nothing learned yet: the first is probed at a quarter of its eta, the
    second waits for its own eta (one early poll for the run, not one per queued job)."""
    time = FakeTime()
    script = Script([lambda r: js(200, status(r.url.path.rsplit("/", 1)[-1], "completed"))])
    p = poller(script, time, ceiling=300.0)
    start = time.now
    ended = [s.batch_id for s in p.iter_follow([PendingJob("a", 100.0), PendingJob("b", 120.0)])]
    assert ended == ["a", "b"] and p.polls == 2
    assert time.sleeps == pytest.approx([25.0, 95.0]) and time.now - start == pytest.approx(120.0)


def test_a_wait_the_eta_asks_for_is_not_cut_to_the_ceiling() -> None:
    """A job queued behind others with a 50 s eta and a 30 s ceiling is polled once, at its
    eta: the ceiling bounds backing off, and a poll before the eta only spends a request."""
    time = FakeTime()
    script = Script([lambda r: js(200, status(r.url.path.rsplit("/", 1)[-1], "completed"))])
    p = poller(script, time)  # ceiling 30
    assert [s.batch_id for s in p.iter_follow([PendingJob("q", 50.0)])] == ["q"]
    assert p.polls == 1 and time.sleeps == pytest.approx([50.0])


NOT_FOUND = {"detail": {"error": "job not found", "error_code": "NOT_FOUND"}}


def per_job(answers: dict[str, list[httpx.Response]]) -> Script:
    """A service answering each job's polls from its own list (its last answer repeats)."""
    seen: dict[str, int] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        job = request.url.path.rsplit("/", 1)[-1]
        replies = answers[job]
        seen[job] = seen.get(job, 0) + 1
        return replies[min(seen[job], len(replies)) - 1]

    return Script([answer])


def test_a_job_the_service_does_not_show_yet_is_polled_again_backing_off() -> None:
    """Fewer 404s in a row than UNKNOWN_AFTER: a read path behind the write path, not a lost
    job. The job is polled again, backing off as after a failed poll, and followed to its end."""
    from placeflow.api.poller import UNKNOWN_AFTER

    time = FakeTime()
    misses = [js(404, NOT_FOUND)] * (UNKNOWN_AFTER - 1)
    script = per_job({"job_a": [*misses, js(200, status("job_a", "completed"))]})
    p = poller(script, time)
    ended = [s.batch_id for s in p.iter_follow(["job_a"])]
    assert ended == ["job_a"] and p.unknown == {}
    assert len(script.requests) == UNKNOWN_AFTER
    assert time.sleeps == [1.0, 2.0][: UNKNOWN_AFTER - 1]


def test_a_job_the_service_keeps_answering_404_for_is_dropped_and_the_others_followed() -> None:
    """UNKNOWN_AFTER 404s in a row: the job is named in `unknown` (the last answer kept) and no
    longer polled; no error ends the following, and the other job is followed to its end."""
    from placeflow.api.errors import NotFound
    from placeflow.api.poller import UNKNOWN_AFTER

    time = FakeTime()
    script = per_job(
        {
            "job_gone": [js(404, NOT_FOUND)],
            "job_b": [
                js(200, status("job_b", "running", eta=20)),
                js(200, status("job_b", "completed")),
            ],
        }
    )
    p = poller(script, time)
    ended = [s.batch_id for s in p.iter_follow(["job_gone", "job_b"])]
    assert ended == ["job_b"]
    assert list(p.unknown) == ["job_gone"] and isinstance(p.unknown["job_gone"], NotFound)
    asked = [r.url.path.rsplit("/", 1)[-1] for r in script.requests]
    assert asked.count("job_gone") == UNKNOWN_AFTER and asked.count("job_b") == 2


def test_waiting_on_a_job_the_service_does_not_know_raises_its_404() -> None:
    """`wait` on a job answered 404 UNKNOWN_AFTER times raises the service's NotFound."""
    from placeflow.api.errors import NotFound
    from placeflow.api.poller import UNKNOWN_AFTER

    script = per_job({"job_gone": [js(404, NOT_FOUND)]})
    with pytest.raises(NotFound):
        poller(script, FakeTime()).wait("job_gone")
    assert len(script.requests) == UNKNOWN_AFTER


class StampedTime(FakeTime):
    """FakeTime that also records when each sleep ended (a poll follows each)."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps_at: list[float] = []

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.sleeps_at.append(self.now)


def watched_job(time: StampedTime, **kwargs: Any) -> tuple[list[float], int]:
    """One job of 100 rows the service says ends in 20 s, processing 5 rows a second: when
    (seconds from the start) it was polled, and the rows it had processed then."""
    start = time.now

    def reply(request: httpx.Request) -> httpx.Response:
        done = min(100, int((time.now - start) * 5))
        body = status("job_1", "running", eta=20 - done // 5, processed=done)
        if done == 100:  # ended, its result file shown
            file = {"url": "https://files.test/r", "size_bytes": 1, "sha256": "0" * 64,
                    "expires_at": "2026-01-02T00:00:00Z"}  # fmt: skip
            body.update(status="completed", results={"total_items": 100, "files": [file]})
        return js(200, body)

    script = Script([reply])
    p = poller(script, time, **kwargs)
    list(p.iter_follow([PendingJob("job_1", 20.0)]))
    polled = [r for r in script.requests if r.method == "GET"]
    return [round(t - start, 3) for t in time.sleeps_at], len(polled)


def test_watch_polls_the_job_due_next_early_so_its_progress_moves() -> None:
    """With `watch` 5, a job whose eta is 20 s is looked at every 5 s (its processed rows
    move: 25, 50, 75, then it ends); without it, once, when its eta says it has ended."""
    at, polls = watched_job(StampedTime(), watch=5.0)
    assert at == [5.0, 10.0, 15.0, 20.0] and polls == 4
    at, polls = watched_job(StampedTime())
    assert at == [20.0] and polls == 1


def test_watch_is_no_faster_than_the_floor() -> None:
    """A watch below the poller's floor is refused: it would poll faster than the floor."""
    with pytest.raises(ValueError, match="watch"):
        poller(Script([]), FakeTime(), floor=2.0, watch=1.0)
