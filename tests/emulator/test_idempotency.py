"""Contract: Idempotency-Key on job submissions, exactly as the spec's rule 5."""

from __future__ import annotations

from .conftest import KEY, Harness, MakeHarness, place

BODY = {"pois": [place(i) for i in range(20)]}


def test_replay_returns_the_original_job_without_a_new_hold(sb: Harness) -> None:
    """The same key and body return the stored response with Idempotent-Replayed; no new hold."""
    first = sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "run1-chunk0"})
    again = sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "run1-chunk0"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    stats = sb.stats()
    assert stats["jobs"]["created"] == 1 and stats["idempotent_replays"] == 1
    assert stats["keys"][KEY]["credits"]["held_total"] == 20
    assert stats["duplicate_submissions"] == 0


def test_same_key_different_body_is_409_conflict(sb: Harness) -> None:
    """A different body under a retained key is 409 IDEMPOTENCY_CONFLICT naming the key."""
    sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "k1"})
    other = {"pois": [place(i) for i in range(21)]}
    r = sb.post("/v1/jobs/validate", other, headers={"Idempotency-Key": "k1"})
    assert r.status_code == 409
    assert r.json()["error_code"] == "IDEMPOTENCY_CONFLICT"
    assert r.json()["detail"]["idempotency_key"] == "k1"
    assert sb.stats()["jobs"]["created"] == 1


def test_after_cancellation_the_key_creates_new_work(sb: Harness) -> None:
    """Once the job is cancelled the same key and body create a new job and a new hold."""
    first = sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "k2"}).json()
    sb.http.delete(f"/v1/jobs/{first['batch_id']}")
    second = sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "k2"})
    assert second.status_code == 200 and "idempotent-replayed" not in second.headers
    assert second.json()["batch_id"] != first["batch_id"]
    assert sb.stats()["duplicate_submissions"] == 1


def test_after_retention_expiry_the_key_creates_new_work(make_harness: MakeHarness) -> None:
    """Past the retention period the same key is new work (and a different body is no conflict)."""
    h = make_harness(idempotency_retention_seconds=60.0)
    first = h.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "k3"}).json()
    h.tick(61.0)
    other = {"pois": [place(i) for i in range(5)]}
    second = h.post("/v1/jobs/validate", other, headers={"Idempotency-Key": "k3"})
    assert second.status_code == 200 and second.json()["batch_id"] != first["batch_id"]


def test_invalid_idempotency_key_header_is_a_gateway_400(sb: Harness) -> None:
    """An unusable Idempotency-Key is 400 in the spec's second shape, and nothing is held."""
    r = sb.post("/v1/jobs/validate", BODY, headers={"Idempotency-Key": "x" * 256})
    assert r.status_code == 400
    assert r.json()["detail"]["error_code"] == "INVALID_IDEMPOTENCY_KEY"
    assert sb.credits()["held"] == 0


def test_without_a_key_every_post_is_new_work(sb: Harness) -> None:
    """Without Idempotency-Key a repeated body is a second job, counted as a duplicate."""
    a = sb.post("/v1/jobs/validate", BODY).json()
    b = sb.post("/v1/jobs/validate", BODY).json()
    assert a["batch_id"] != b["batch_id"]
    assert sb.stats()["duplicate_submissions"] == 1
