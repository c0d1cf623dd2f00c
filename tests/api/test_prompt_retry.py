"""Issue 44 item 1: a keyed POST whose answer was lost is replayed at once, a few times, before
any backoff; past those tries a caller that asks the usage gets the question, not a blind
replay; replays take the rate-limit slots before new requests."""

from __future__ import annotations

import threading

import httpx
import pytest

from placeflow.api.errors import OutcomeUnknown
from placeflow.api.limiter import RateLimiter
from placeflow.api.retry import PromptRetry
from placeflow.fields import RateLimits

from .conftest import JOB_SUBMITTED, FakeTime, Script, js, mock_client, poi

LIMITED = {"detail": {"error": "rate limit exceeded"}}
UNAVAILABLE = {"error": "service temporarily unavailable", "error_code": "SERVICE_UNAVAILABLE"}


def dropped() -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError("Server disconnected without sending a response")


def test_a_lost_answer_is_replayed_at_once_not_after_a_backoff() -> None:
    """Three lost answers (a reset, a read timeout, a 502) are replayed 20 ms apart: the fourth
    attempt gets the job; no backoff was slept, and the submission says how many were lost and
    when the first attempt that may have reached the service left."""
    script = Script(
        [dropped(), httpx.ReadTimeout("read"), js(502, {"error": "bad gateway"}),
         js(200, JOB_SUBMITTED)]
    )  # fmt: skip
    time = FakeTime()
    start = time.now
    submission = mock_client(script, time).submit_enrich_job([poi()], idempotency_key="k-1")
    assert submission.batch_id == "job_1" and len(script.requests) == 4
    assert time.sleeps == [0.02, 0.02, 0.02]
    assert submission.lost == 3 and submission.first_sent == start
    assert submission.answered_sent == pytest.approx(start + 0.06)
    assert {r.headers["Idempotency-Key"] for r in script.requests} == {"k-1"}


def test_past_the_prompt_tries_a_window_caller_is_asked_not_replayed_blind() -> None:
    """With a replay window (a caller that asks the usage), every lost answer past the prompt
    tries raises OutcomeUnknown carrying when the first attempt left: 1 + 5 attempts, no
    backoff; without a window the replays go on with backoff as before."""
    time = FakeTime()
    start = time.now
    client = mock_client(Script([dropped()]), time, prompt=PromptRetry(tries=5, spacing=0.02))
    with pytest.raises(OutcomeUnknown) as info:
        client.submit_job_body(
            "enrich", b'{"pois":[{"poi_name":"A"}]}', idempotency_key="k-2", replay_window=60.0,
            possible_credits=1,
        )  # fmt: skip
    assert info.value.first_sent == start and info.value.possible_credits == 1
    assert time.sleeps == [0.02] * 5
    blind = FakeTime()
    script = Script([dropped()] * 7 + [js(200, JOB_SUBMITTED)])
    client = mock_client(script, blind, prompt=PromptRetry(tries=5, spacing=0.02))
    assert client.submit_enrich_job([poi()]).lost == 7
    assert blind.sleeps == [0.02] * 5 + [0.5, 1.0]


def test_a_503_after_a_lost_answer_asks_the_usage_instead_of_backing_off_into_a_replay() -> None:
    """A 503 (the service said wait) after an attempt that may have been processed is not
    waited out and replayed blind by a window caller: it is OutcomeUnknown, and the wait is
    put on the shared limiter so that the usage question waits for it."""
    script = Script([dropped(), js(503, UNAVAILABLE, {"Retry-After": "4"})])
    time = FakeTime()
    client = mock_client(script, time)
    with pytest.raises(OutcomeUnknown):
        client.submit_job_body(
            "enrich", b'{"pois":[{"poi_name":"A"}]}', idempotency_key="k-3", replay_window=60.0
        )
    assert len(script.requests) == 2 and time.sleeps == [0.02]
    assert client.limiter.delay() == pytest.approx(4.0)


def test_a_503_before_anything_may_have_been_processed_still_backs_off() -> None:
    """A 503 on the first attempt bills nothing: it is waited out and retried as before."""
    script = Script([js(503, UNAVAILABLE, {"Retry-After": "2"}), js(200, JOB_SUBMITTED)])
    time = FakeTime()
    submission = mock_client(script, time).submit_job_body(
        "enrich", b'{"pois":[{"poi_name":"A"}]}', idempotency_key="k-4", replay_window=60.0
    )
    assert submission.lost == 0 and submission.first_sent is None
    assert time.sleeps == [2.0]


def test_an_urgent_request_takes_the_next_slot_before_waiting_new_ones() -> None:
    """A new request waits for a full window, then a replay (urgent) comes: when the slot
    frees the replay is let go first, the new request one window later."""
    turn = threading.Event()
    now = [0.0]
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        turn.wait()
        with lock:
            now[0] += seconds

    limiter = RateLimiter(RateLimits(windows=((1, 1.0),)), clock=lambda: now[0], sleep=sleep)
    limiter.acquire()  # the window is full until the clock moves
    stamps: dict[str, float] = {}

    def go(name: str, urgent: bool) -> None:
        limiter.acquire(urgent=urgent)
        stamps[name] = limiter._mine.stamp

    normal = threading.Thread(target=go, args=("new", False))
    normal.start()
    urgent = threading.Thread(target=go, args=("replay", True))
    urgent.start()
    while limiter._urgent == 0:
        threading.Event().wait(0.001)
    turn.set()  # the slot frees: both wake
    urgent.join(5)
    normal.join(5)
    assert stamps["replay"] < stamps["new"], stamps


def test_new_requests_leave_reserved_slots_to_replays() -> None:
    """With three slots of a ten-a-second window reserved, new requests stop at seven; a
    replay (urgent) still gets the eighth to tenth at once, and no more than the window; a
    minute window keeps at most a twentieth."""
    now = [0.0]
    limiter = RateLimiter(RateLimits(windows=((10, 1.0),)), clock=lambda: now[0],
                          sleep=lambda s: None, reserve=3)  # fmt: skip
    for _ in range(7):
        limiter.acquire()
    assert limiter.delay() > 0
    waits = [limiter.acquire(urgent=True) for _ in range(3)]
    assert waits == [0.0, 0.0, 0.0]
    assert limiter._delay(limiter.log._state, now[0], urgent=True) > 0  # type: ignore[attr-defined]  # the log's private state
    minute = RateLimiter(RateLimits(windows=((100, 60.0),)), reserve=50)
    assert minute._reserved == (5,)
