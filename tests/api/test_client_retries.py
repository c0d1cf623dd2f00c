"""Retries against a scripted server: what is retried, how long it waits, what it may cost."""

from __future__ import annotations

import httpx
import pytest

from placeflow.api.errors import (
    BadRequest,
    ConnectionLost,
    OutcomeUnknown,
    RateLimited,
    RequestTimedOut,
    ServerError,
    ServiceUnavailable,
)
from placeflow.api.retry import RetryPolicy
from placeflow.api.session import PossibleDoubleCharge

from .conftest import JOB_SUBMITTED, VALIDATE_OK, FakeTime, Script, js, mock_client, poi

LIMITED = {"detail": {"error": "rate limit exceeded"}}


def test_429_waits_for_retry_after() -> None:
    """A 429 with Retry-After: 3 waits three seconds, then succeeds on the retry."""
    script = Script([js(429, LIMITED, {"Retry-After": "3"}), js(200, VALIDATE_OK)])
    time = FakeTime()
    assert mock_client(script, time).validate(poi()).success
    assert len(script.requests) == 2
    assert time.sleeps == [3.0]


@pytest.mark.parametrize("header", [{}, {"Retry-After": "0"}], ids=["missing", "zero"])
def test_429_without_a_usable_retry_after_still_backs_off(header: dict[str, str]) -> None:
    """A missing or zero Retry-After still waits the exponential backoff."""
    script = Script([js(429, LIMITED, header), js(429, LIMITED, header), js(200, VALIDATE_OK)])
    time = FakeTime()
    mock_client(script, time).validate(poi())
    assert time.sleeps == [0.5, 1.0]


def test_maintenance_waits_until_resume_at() -> None:
    """A 503 maintenance body with resume_at 40 s ahead waits those 40 s."""
    time = FakeTime(1_767_225_600.0)  # 2026-01-01T00:00:00Z
    body = {"detail": {"error": "maintenance", "message": "m", "resume_at": "2026-01-01T00:00:40Z"}}
    script = Script([js(503, body, {"Retry-After": "1"}), js(200, VALIDATE_OK)])
    mock_client(script, time).validate(poi())
    assert time.sleeps == [40.0]


def test_server_wait_beyond_the_policy_is_raised_not_slept() -> None:
    """A resume_at further away than max_server_wait raises ServiceUnavailable with the wait."""
    time = FakeTime(1_767_225_600.0)
    body = {"detail": {"error": "maintenance", "resume_at": "2026-01-01T02:00:00Z"}}
    script = Script([js(503, body)])
    with pytest.raises(ServiceUnavailable) as info:
        mock_client(script, time).validate(poi())
    assert info.value.wait == 7200.0 and info.value.resume_at == "2026-01-01T02:00:00Z"
    assert time.sleeps == [] and len(script.requests) == 1


def test_500_is_retried_with_capped_backoff_until_the_budget() -> None:
    """Persistent 500s are retried max_attempts times, then the last error is raised."""
    script = Script([js(500, {"error": "boom"})])
    time = FakeTime()
    policy = RetryPolicy(max_attempts=6, initial_backoff=1.0, max_backoff=4.0, jitter=0.0)
    with pytest.raises(ServerError) as info:
        mock_client(script, time, retry=policy).job_status("job_1")
    assert len(script.requests) == 6 and info.value.attempts == 6
    assert time.sleeps == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert "gave up after 6 attempt(s)" in "".join(info.value.__notes__)


def test_total_wait_budget_ends_retries_early() -> None:
    """Retries stop once the next wait would exceed the policy's budget of waiting."""
    script = Script([js(500, {"error": "boom"})])
    time = FakeTime()
    policy = RetryPolicy(max_attempts=10, initial_backoff=1.0, jitter=0.0, budget=3.5)
    with pytest.raises(ServerError):
        mock_client(script, time, retry=policy).job_status("job_1")
    assert time.sleeps == [1.0, 2.0]


def test_terminal_error_is_raised_at_once() -> None:
    """A 400 is never retried, whatever the retry policy."""
    script = Script([js(400, {"error": "bad", "error_code": "VALIDATION_ERROR", "detail": []})])
    time = FakeTime()
    with pytest.raises(BadRequest):
        mock_client(script, time).validate(poi())
    assert len(script.requests) == 1 and time.sleeps == []


def test_connect_error_retries_even_a_charged_request() -> None:
    """A connection that never opened sent nothing, so even validate is retried, no charge noted."""
    script = Script([httpx.ConnectError("refused"), js(200, VALIDATE_OK)])
    client = mock_client(script, FakeTime())
    assert client.validate(poi()).success
    assert client.possible_double_charges == []


def test_dropped_validate_is_not_retried_by_default() -> None:
    """A validate whose response never came raises OutcomeUnknown after one attempt."""
    script = Script([httpx.RemoteProtocolError("Server disconnected"), js(200, VALIDATE_OK)])
    client = mock_client(script, FakeTime())
    with pytest.raises(OutcomeUnknown) as info:
        client.validate(poi())
    assert len(script.requests) == 1
    assert info.value.possible_credits == 1
    assert "allow_double_charge=True" in str(info.value)
    assert isinstance(info.value.__cause__, ConnectionLost)


def test_dropped_batch_retried_when_allowed_reports_the_possible_charge() -> None:
    """With allow_double_charge the retry happens and the possible extra credits are recorded."""
    seen: list[PossibleDoubleCharge] = []
    batch_ok = {"success": True, "results": [], "stats": {"total": 3}}
    script = Script([httpx.ReadTimeout("slow"), js(200, batch_ok)])
    client = mock_client(script, FakeTime(), on_possible_double_charge=seen.append)
    client.enrich_batch([poi(1), poi(2), poi(3)], allow_double_charge=True)
    assert len(script.requests) == 2
    assert [(c.endpoint, c.credits, c.reason) for c in seen] == [
        ("POST /v1/enrich-batch", 3, "RequestTimedOut")
    ]
    assert client.possible_double_charges == seen and client.possible_extra_credits == 3


def test_read_timeout_on_a_poll_is_retried() -> None:
    """A GET that timed out is safe to repeat and is retried."""
    status = {**JOB_SUBMITTED, "status": "running"}
    script = Script([httpx.ReadTimeout("slow"), js(200, status)])
    assert mock_client(script, FakeTime()).job_status("job_1").status == "running"
    assert len(script.requests) == 2


def test_timeouts_that_outlast_the_budget_raise_request_timed_out() -> None:
    """Only timeouts: the last RequestTimedOut is raised once attempts run out."""
    script = Script([httpx.ReadTimeout("slow")])
    with pytest.raises(RequestTimedOut):
        mock_client(script, FakeTime(), retry=RetryPolicy(max_attempts=2)).job_status("job_1")
    assert len(script.requests) == 2


def test_submission_retries_reuse_key_and_body() -> None:
    """Every retry of one submission sends the same Idempotency-Key and the identical bytes."""
    script = Script(
        [httpx.RemoteProtocolError("dropped"), js(500, {"error": "x"}), js(200, JOB_SUBMITTED)]
    )
    submission = mock_client(script, FakeTime()).submit_enrich_job([poi(1), poi(2)])
    keys = {r.headers["Idempotency-Key"] for r in script.requests}
    assert keys == {submission.idempotency_key} and len(script.requests) == 3
    assert len(set(script.bodies())) == 1


def test_each_submission_gets_its_own_generated_key() -> None:
    """Two logical submissions without a caller key get two different keys."""
    script = Script([js(200, JOB_SUBMITTED)])
    client = mock_client(script, FakeTime())
    first = client.submit_validate_job([poi()])
    second = client.submit_validate_job([poi()])
    assert first.idempotency_key != second.idempotency_key


def test_caller_key_is_sent_and_replay_header_read() -> None:
    """The caller's key is sent as is; Idempotent-Replayed: true marks a replay."""
    script = Script([js(200, JOB_SUBMITTED, {"Idempotent-Replayed": "true"})])
    submission = mock_client(script, FakeTime()).submit_enrich_job([poi()], idempotency_key="run-1")
    assert script.requests[0].headers["Idempotency-Key"] == "run-1"
    assert submission.replayed and submission.batch_id == "job_1"


def test_429_defers_the_shared_limiter() -> None:
    """While one caller waits out a 429, the shared limiter holds every other caller back too."""
    script = Script([js(429, LIMITED, {"Retry-After": "5"}), js(200, VALIDATE_OK)])
    time = FakeTime()
    seen_by_others: list[float] = []
    client = mock_client(script, time)

    def sleep(seconds: float) -> None:
        seen_by_others.append(client.limiter.delay())
        time.sleep(seconds)

    client.sleep = sleep
    client.validate(poi())
    assert seen_by_others == [pytest.approx(5.0)]


def test_rate_limited_exhaustion_raises_rate_limited_with_wait() -> None:
    """Persistent 429s end as RateLimited carrying the server's wait."""
    script = Script([js(429, LIMITED, {"Retry-After": "2"})])
    with pytest.raises(RateLimited) as info:
        mock_client(script, FakeTime(), retry=RetryPolicy(max_attempts=3)).job_status("job_1")
    assert info.value.wait == 2.0 and info.value.attempts == 3
