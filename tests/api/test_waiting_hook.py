"""The client tells the hook it was built with before it waits: before each request (the rate
gate's delay) and before each pause (a backoff), so a run's writer lets go of the warehouse
then; nothing patches the client's sleep or limiter."""

from __future__ import annotations

from tests.api.conftest import VALIDATE_OK, FakeTime, Script, js, mock_client, poi

LIMITED = {"detail": {"error": "rate limit exceeded"}}


def test_the_hook_hears_of_every_request_and_every_backoff() -> None:
    """A validate answered 429 (Retry-After 2), then 200: the hook heard of the first request
    (no delay at the gate), of the 2 s backoff before its sleep, and of the second request;
    the client's own sleep and limiter are the ones it was built with."""
    time = FakeTime()
    heard: list[tuple[float, int]] = []
    script = Script([js(429, LIMITED, {"Retry-After": "2"}), js(200, VALIDATE_OK)])
    client = mock_client(
        script, time, waiting=lambda seconds: heard.append((seconds, len(script.requests)))
    )
    sleep, limiter = client.sleep, client.limiter
    client.validate(poi())
    assert heard[0] == (0.0, 0)  # before the first request went out
    assert (2.0, 1) in heard  # before the backoff, after the first answer
    assert heard[-1][1] == 1 and len(script.requests) == 2  # before the second request
    assert time.sleeps[0] == 2.0  # the hook took no time: the whole backoff was slept
    assert client.sleep is sleep and client.limiter is limiter
