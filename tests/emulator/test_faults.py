"""Contract: the failure modes tests switch on, each acting as the spec's errors look."""

from __future__ import annotations

import httpx
import pytest

from placeflow.emulator import FaultConfig

from .conftest import KEY, Harness, MakeHarness, place


def test_injected_500_and_503_have_the_spec_shapes(sb: Harness) -> None:
    """A 500 is an ErrorResponse; a 503 carries Retry-After; maintenance has resume_at."""
    sb.sandbox.inject("POST /v1/validate", "500")
    sb.sandbox.inject("POST /v1/validate", "503")
    sb.sandbox.inject("POST /v1/validate", "maintenance")
    r500, r503, rmaint = (sb.post("/v1/validate", place()) for _ in range(3))
    assert r500.status_code == 500 and r500.json()["success"] is False
    assert r503.status_code == 503 and r503.headers["retry-after"] == "1"
    assert rmaint.status_code == 503
    assert (
        rmaint.json()["detail"]["error"] == "maintenance" and rmaint.json()["detail"]["resume_at"]
    )
    assert sb.credits()["charged"] == 0
    assert sb.stats()["requests"]["POST /v1/validate"] == {"500": 1, "503": 2}


def test_extra_429_carries_retry_after(sb: Harness) -> None:
    """An injected 429 looks like the limiter's own."""
    sb.sandbox.inject("GET /v1/usage", "429")
    r = sb.get("/v1/usage")
    assert r.status_code == 429 and r.headers["retry-after"]


def test_dropped_request_has_no_effect(sb: Harness) -> None:
    """A request dropped before processing creates nothing and charges nothing."""
    sb.sandbox.inject("POST /v1/jobs/validate", "drop_request")
    with pytest.raises(httpx.RemoteProtocolError):
        sb.post("/v1/jobs/validate", {"pois": [place()]})
    s = sb.stats()
    assert s["jobs"]["created"] == 0 and s["requests"]["POST /v1/jobs/validate"] == {"dropped": 1}


def test_dropped_response_still_did_the_work(sb: Harness) -> None:
    """A response dropped after processing leaves the job created and its credits held."""
    sb.sandbox.inject("POST /v1/jobs/validate", "drop_response")
    with pytest.raises(httpx.RemoteProtocolError):
        sb.post(
            "/v1/jobs/validate",
            {"pois": [place(i) for i in range(7)]},
            headers={"Idempotency-Key": "lost"},
        )
    assert sb.stats()["jobs"]["created"] == 1 and sb.credits()["held"] == 7
    replay = sb.post(
        "/v1/jobs/validate",
        {"pois": [place(i) for i in range(7)]},
        headers={"Idempotency-Key": "lost"},
    )
    assert replay.headers["idempotent-replayed"] == "true"
    assert sb.stats()["jobs"]["created"] == 1 and sb.credits()["held"] == 7


def test_slow_response_takes_sandbox_time(sb: Harness) -> None:
    """A slow response spends `slow_seconds` of the sandbox's clock before answering."""
    t0 = sb.clock.now()
    sb.sandbox.inject("GET /v1/usage", "slow")
    assert sb.get("/v1/usage").status_code == 200
    assert sb.clock.now() - t0 == pytest.approx(2.0)


def test_failed_job_releases_its_hold(sb: Harness) -> None:
    """A job the sandbox fails ends failed with an error and error_code, and charges nothing."""
    sb.sandbox.inject("JOB", "fail")
    batch = sb.post("/v1/jobs/enrich", {"pois": [place(i) for i in range(50)]}).json()["batch_id"]
    s = sb.get(f"/v1/jobs/{batch}").json()
    assert s["status"] == "failed" and s["error"] and s["error_code"] and s["results"] is None
    c = sb.credits()
    assert c["held"] == 0 and c["charged"] == 0 and c["released"] == 50


def test_stalled_job_never_finishes_until_cancelled(sb: Harness) -> None:
    """A stalled job stays running at half its rows however long one waits; DELETE settles it."""
    sb.sandbox.inject("JOB", "stall")
    batch = sb.post("/v1/jobs/validate", {"pois": [place(i) for i in range(100)]}).json()[
        "batch_id"
    ]
    sb.tick(3_600.0)
    s = sb.get(f"/v1/jobs/{batch}").json()
    assert s["status"] == "running" and s["progress"]["processed"] == 50
    sb.http.delete(f"/v1/jobs/{batch}")
    c = sb.credits()
    assert c["held"] == 0 and 0 < c["charged"] <= 50


def test_random_faults_follow_their_seed(make_harness: MakeHarness) -> None:
    """The same fault seed acts out the same faults on the same request sequence."""

    def run() -> list[int]:
        h = make_harness(faults=FaultConfig(seed=7, error_500_rate=0.3, error_503_rate=0.2))
        codes = []
        for _ in range(40):
            codes.append(h.get("/v1/usage").status_code)
            h.tick(1.0)
        return codes

    first, second = run(), run()
    assert first == second and {500, 503, 200} <= set(first)


def test_credits_running_out_mid_run(sb: Harness) -> None:
    """Setting a key's balance low makes the next submission that cannot be held a 402."""
    assert sb.post("/v1/jobs/validate", {"pois": [place(i) for i in range(10)]}).status_code == 200
    sb.sandbox.backend.set_available(KEY, 5)
    r = sb.post("/v1/jobs/validate", {"pois": [place(i) for i in range(10, 20)]})
    assert r.status_code == 402 and r.json()["detail"]["available_credits"] == 5


def test_control_endpoints_switch_faults_and_reset(sb: Harness) -> None:
    """/_sandbox/faults, /_sandbox/inject and /_sandbox/reset work over HTTP."""
    assert sb.http.post("/_sandbox/faults", json={"error_500_rate": 1.0}).status_code == 200
    assert sb.get("/v1/usage").status_code == 500
    sb.http.post("/_sandbox/faults", json={})
    sb.http.post("/_sandbox/inject", json={"route": "GET /v1/usage", "kind": "503"})
    assert sb.get("/v1/usage").status_code == 503
    assert sb.http.post("/_sandbox/faults", json={"nonsense": 1}).status_code == 400
    sb.http.post("/_sandbox/reset")
    assert sb.http.get("/_sandbox/stats").json()["requests"] == {}


def test_gate_holds_a_request_until_opened() -> None:
    """A held request waits for the test; opened with drop it is never processed."""
    import threading

    from placeflow.emulator import KeySpec, Sandbox, SandboxConfig

    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),)))
    gate = sandbox.hold("POST /v1/validate")
    with (
        sandbox.serve() as srv,
        httpx.Client(base_url=srv.base_url, headers={"X-API-Key": KEY}) as api,
    ):
        outcome: list[object] = []

        def send() -> None:
            try:
                outcome.append(api.post("/v1/validate", json=place()).status_code)
            except httpx.RemoteProtocolError as exc:
                outcome.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        assert gate.arrived.wait(10)
        assert outcome == []
        gate.open(drop=True)
        sender.join(10)
    assert isinstance(outcome[0], httpx.RemoteProtocolError)
    assert sandbox.stats()["keys"][KEY]["credits"]["charged"] == 0
