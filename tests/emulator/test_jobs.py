"""Contract: bulk jobs: the state machine, honest eta, holds, settlement and result files."""

from __future__ import annotations

import gzip
import hashlib
import json
from typing import Any

import httpx

from placeflow.api.models import (
    JobStatus,
    JobSubmitResponse,
    POIEnrichResponse,
    POIValidateResponse,
)
from placeflow.emulator import KeySpec
from placeflow.emulator.synth import is_billable

from .conftest import FREE_KEY, KEY, Harness, MakeHarness, place


def submit(
    h: Harness, n: int, kind: str = "validate", start: int = 0, **kw: Any
) -> JobSubmitResponse:
    r = h.post(f"/v1/jobs/{kind}", {"pois": [place(i) for i in range(start, start + n)]}, **kw)
    assert r.status_code == 200, r.text
    return JobSubmitResponse.model_validate(r.json())


def status(h: Harness, batch_id: str) -> JobStatus:
    r = h.get(f"/v1/jobs/{batch_id}")
    assert r.status_code == 200, r.text
    return JobStatus.model_validate(r.json())


def download(h: Harness, url: str) -> bytes:
    with httpx.Client(transport=h.sandbox.transport()) as plain:
        r = plain.get(url)
    assert r.status_code == 200, r.text
    return r.content


def test_job_moves_queued_running_completed_with_truthful_eta(sb: Harness) -> None:
    """At 1,000 rows/s a 2,500-row job says eta 3 s, shows progress, and completes at 2.5 s."""
    job = submit(sb, 2_500)
    assert job.status == "running" and job.total_items == 2_500 and job.eta_seconds == 3
    sb.tick(1.0)
    s = status(sb, job.batch_id)
    assert s.status == "running" and s.progress is not None
    assert s.progress.processed == 1_000
    assert s.progress.succeeded + s.progress.failed == 1_000
    assert s.eta_seconds == 2 and s.results is None
    sb.tick(1.49)
    assert status(sb, job.batch_id).status == "running"
    sb.tick(0.01)
    done = status(sb, job.batch_id)
    assert done.status == "completed" and done.eta_seconds == 0
    assert done.started_at and done.completed_at and done.results is not None
    assert done.progress is not None and done.progress.processed == 2_500


def test_running_jobs_per_key_are_capped_and_eta_counts_the_queue(
    make_harness: MakeHarness,
) -> None:
    """With two running slots a third job waits queued, and its eta includes the wait."""
    h = make_harness(rows_per_second=100.0, max_running_jobs=2)
    a, b = submit(h, 100), submit(h, 300, start=100)
    c = submit(h, 100, start=400)
    assert (a.status, b.status, c.status) == ("running", "running", "queued")
    assert c.eta_seconds == 2  # starts when a finishes at 1 s, then 1 s of work
    h.tick(1.0)
    assert status(h, c.batch_id).status == "running"
    h.tick(1.0)
    assert status(h, c.batch_id).status == "completed"
    assert status(h, b.batch_id).status == "running"
    h.tick(1.0)
    assert status(h, b.batch_id).status == "completed"


def test_result_file_matches_sha256_size_order_and_contract(sb: Harness) -> None:
    """The file's sha256 and size match results.files[]; one line per row, in order, ids kept."""
    pois = [place(i) for i in range(300)]
    pois[5].pop("id")
    r = sb.post("/v1/jobs/enrich", {"pois": pois})
    batch = r.json()["batch_id"]
    sb.tick(1.0)
    s = status(sb, batch)
    assert s.results is not None and s.results.format == "jsonl.gz"
    (f,) = s.results.files
    data = download(sb, f.url)
    assert len(data) == f.size_bytes and hashlib.sha256(data).hexdigest() == f.sha256
    lines = gzip.decompress(data).decode().splitlines()
    assert len(lines) == s.results.total_items == 300
    rows = [POIEnrichResponse.model_validate(json.loads(line)) for line in lines]
    assert [row.id for row in rows] == [p.get("id") for p in pois]
    assert f.url.startswith(sb.sandbox.files_url) and not f.url.startswith(sb.sandbox.base_url)


def test_credits_hold_then_charge_billable_rows_and_release_the_rest(sb: Harness) -> None:
    """Submission holds 1 per row; completion charges the billable rows, releases the rest."""
    job = submit(sb, 1_000, kind="enrich")
    held = sb.credits()
    assert held["held"] == 1_000 and held["charged"] == 0
    sb.tick(2.0)
    s = status(sb, job.batch_id)
    assert s.results is not None
    rows = [
        json.loads(x) for x in gzip.decompress(download(sb, s.results.files[0].url)).splitlines()
    ]
    billable = sum(is_billable("enrich", row) for row in rows)
    failed = sum(not row["success"] for row in rows)
    assert failed > 0, "a realistic share of rows fails"
    after = sb.credits()
    assert after["held"] == 0
    assert after["charged"] == billable <= 1_000 - failed
    assert after["released"] == 1_000 - billable
    assert sb.stats()["keys"][KEY]["double_charged_refs"] == []


def test_unbillable_rows_are_released(sb: Harness) -> None:
    """Enrich rows asking only for attributes that come back null (no status) are free."""
    pois = [place(i, attributes=["tiktok"]) for i in range(400)]
    batch = sb.post("/v1/jobs/enrich", {"pois": pois}).json()["batch_id"]
    sb.tick(1.0)
    s = status(sb, batch)
    assert s.results is not None
    rows = [
        json.loads(x) for x in gzip.decompress(download(sb, s.results.files[0].url)).splitlines()
    ]
    null_rows = sum(1 for r in rows if r["success"] and r["attributes"]["tiktok"]["value"] is None)
    assert null_rows > 0 and all(r["status"] is None for r in rows)
    assert sb.credits()["released"] >= null_rows


def test_cancel_charges_processed_rows_only_and_keeps_them_downloadable(sb: Harness) -> None:
    """DELETE mid-run: processed rows stay billed and downloadable, unprocessed are not charged."""
    job = submit(sb, 5_000)
    sb.tick(2.0)
    r = sb.http.delete(f"/v1/jobs/{job.batch_id}")
    assert r.status_code == 200
    assert r.json()["cancelled"] is True and r.json()["status"] == "cancelled"
    s = status(sb, job.batch_id)
    assert s.status == "cancelled" and s.progress is not None and s.progress.processed == 2_000
    assert s.results is not None and s.results.total_items == 2_000
    rows = gzip.decompress(download(sb, s.results.files[0].url)).splitlines()
    assert len(rows) == 2_000
    billable = sum(is_billable("validate", json.loads(x)) for x in rows)
    c = sb.credits()
    assert c["charged"] == billable and c["held"] == 0 and c["released"] == 5_000 - billable
    again = sb.http.delete(f"/v1/jobs/{job.batch_id}").json()
    assert again["cancelled"] is False and again["status"] == "cancelled"
    assert sb.credits() == c


def test_invalid_row_rejects_the_whole_job_naming_the_row(sb: Harness) -> None:
    """One bad row fails the submission with 400 naming pois[17].poi_name; nothing is held."""
    pois = [place(i) for i in range(30)]
    pois[17]["poi_name"] = ""
    pois[22]["country"] = "Germany"
    r = sb.post("/v1/jobs/validate", {"pois": pois})
    assert r.status_code == 400
    assert [d["field"] for d in r.json()["detail"]] == ["pois[17].poi_name", "pois[22].country"]
    assert sb.credits()["held"] == 0 and sb.stats()["jobs"]["created"] == 0


def test_job_size_limits(sb: Harness) -> None:
    """A job takes 1 to 10,000 places: empty and 10,001 are 400, 10,000 is accepted."""
    assert sb.post("/v1/jobs/validate", {"pois": []}).status_code == 400
    big = [place(i) for i in range(10_001)]
    r = sb.post("/v1/jobs/validate", {"pois": big})
    assert r.status_code == 400 and r.json()["detail"][0]["field"] == "pois"
    assert sb.post("/v1/jobs/validate", {"pois": big[:10_000]}).status_code == 200


def test_402_when_the_hold_cannot_be_covered(make_harness: MakeHarness) -> None:
    """A job whose 1-per-row hold exceeds the available balance is 402 and creates nothing."""
    h = make_harness(keys=(KeySpec(key=KEY, credits=99),))
    r = h.post("/v1/jobs/validate", {"pois": [place(i) for i in range(100)]})
    assert r.status_code == 402
    assert r.json()["detail"]["needed_credits"] == 100
    assert h.stats()["jobs"]["created"] == 0 and h.credits()["held"] == 0


def test_unknown_malformed_and_foreign_batch_ids(sb: Harness) -> None:
    """An unknown batch_id is 404, a malformed one 422, and another key's job is 404."""
    job = submit(sb, 1)
    assert sb.get("/v1/jobs/job_ffffffffffffffffffffffff").status_code == 404
    r = sb.get("/v1/jobs/not-a-batch")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["path", "batch_id"]
    foreign = sb.http.get(f"/v1/jobs/{job.batch_id}", headers={"X-API-Key": FREE_KEY})
    assert foreign.status_code == 404


def test_instant_setting_completes_at_submission(make_harness: MakeHarness) -> None:
    """With rows_per_second None a job is completed as soon as it is submitted."""
    h = make_harness()
    job = submit(h, 50)
    assert job.status == "completed" and job.eta_seconds == 0
    s = status(h, job.batch_id)
    rows = gzip.decompress(download(h, s.results.files[0].url)).splitlines()  # type: ignore[union-attr]  # completed: has results
    assert [POIValidateResponse.model_validate_json(x).id for x in rows] == [
        f"p{i}" for i in range(50)
    ]
