"""The sandbox's knobs for the spec's other readings: each off by default, each doing what
docs/spec-readings.md says it does, as the sandbox itself reports it."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from placeflow.api.retry import parse_timestamp
from placeflow.emulator import FaultConfig
from placeflow.emulator.synth import is_billable

from .conftest import KEY, Harness, MakeHarness, place

START = 1_790_000_000.0


def job(h: Harness, n: int, key: str, **fields: Any) -> dict[str, Any]:
    r = h.post(
        "/v1/jobs/enrich",
        json={"pois": [place(i, **fields) for i in range(n)]},
        headers={"Idempotency-Key": key},
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_knobs_are_off_by_default_and_read_from_the_cli_form() -> None:
    """FaultConfig() changes nothing; `name=value` pairs are typed by their setting."""
    plain = FaultConfig()
    assert (plain.eta_factor, plain.clock_skew_seconds, plain.bill_null_status) == (1.0, 0.0, True)
    parsed = FaultConfig.from_pairs(
        ["eta_factor=0.5", "unknown_fields=true", "refuse_file_batches=job_a,job_b", "seed=3"]
    )
    assert parsed.eta_factor == 0.5 and parsed.unknown_fields is True and parsed.seed == 3
    assert parsed.refuse_file_batches == ("job_a", "job_b")
    with pytest.raises(ValueError, match="unknown fault setting"):
        FaultConfig.from_pairs(["eta_fudge=2"])
    with pytest.raises(ValueError, match="true or false"):
        FaultConfig.from_pairs(["unknown_fields=maybe"])


def test_clock_skew_shifts_every_timestamp_the_service_writes(make_harness: MakeHarness) -> None:
    """With the service's clock 600 s ahead, created_at, eta_completion_at and usage's
    validation_timestamp are 600 s ahead of the sandbox's real time."""
    h = make_harness(faults=FaultConfig(clock_skew_seconds=600.0), rows_per_second=100.0)
    submitted = job(h, 100, "skew")
    usage = h.get("/v1/usage").json()
    assert parse_timestamp(submitted["created_at"]) == pytest.approx(START + 600.0)
    assert parse_timestamp(submitted["eta_completion_at"]) == pytest.approx(START + 601.0)
    assert parse_timestamp(usage["validation_timestamp"]) == pytest.approx(START + 600.0)


@pytest.mark.parametrize("factor", [1 / 3, 3.0])
def test_eta_factor_scales_what_is_told_not_what_happens(
    make_harness: MakeHarness, factor: float
) -> None:
    """eta_seconds is the true eta times the factor; the job still ends on its true schedule."""
    h = make_harness(faults=FaultConfig(eta_factor=factor), rows_per_second=100.0)
    submitted = job(h, 600, "eta")
    assert submitted["eta_seconds"] == pytest.approx(6 * factor, abs=1)
    h.tick(6.0)
    assert h.get(f"/v1/jobs/{submitted['batch_id']}").json()["status"] == "completed"


def test_finalizing_is_shown_between_running_and_completed(make_harness: MakeHarness) -> None:
    """For finalizing_seconds after processing the job says `finalizing`, without results."""
    h = make_harness(faults=FaultConfig(finalizing_seconds=10.0), rows_per_second=100.0)
    batch = job(h, 100, "fin")["batch_id"]
    h.tick(2.0)
    shown = h.get(f"/v1/jobs/{batch}").json()
    assert shown["status"] == "finalizing" and shown["results"] is None
    assert shown["progress"]["processed"] == 100 and shown["completed_at"] is None
    h.tick(10.0)
    assert h.get(f"/v1/jobs/{batch}").json()["status"] == "completed"


@pytest.mark.parametrize("bill", [True, False])
def test_null_status_rows_billed_by_either_reading(make_harness: MakeHarness, bill: bool) -> None:
    """Rows asking only for existence whose status object is all null: billed under one
    reading, released under the other; the sandbox's per-row ledger agrees with its charge."""
    faults = FaultConfig(null_status_rate=0.3, bill_null_status=bill)
    h = make_harness(faults=faults, fail_rate=0.0)
    submitted = job(h, 400, f"null-{bill}", attributes=["existence"])
    lines = h.get(f"/v1/jobs/{submitted['batch_id']}").json()
    assert lines["status"] == "completed"
    key = h.stats()["keys"][KEY]
    charged = key["credits"]["charged"]
    assert key["billed"]["rows"] == charged
    if bill:
        assert charged == 400
    else:
        assert 60 <= 400 - charged <= 180  # about 30% released
    url = lines["results"]["files"][0]["url"]
    rows = [json.loads(x) for x in gzip.decompress(h.http.get(url).content).splitlines()]
    assert sum(is_billable("enrich", r, null_status_billed=bill) for r in rows) == charged


def test_a_refused_file_is_refused_forever(make_harness: MakeHarness) -> None:
    """A job drawn (or named) to have its file refused gets 403 on every fresh URL."""
    h = make_harness(faults=FaultConfig(refuse_file_rate=1.0))
    batch = job(h, 5, "deny")["batch_id"]
    for _ in range(3):
        url = h.get(f"/v1/jobs/{batch}").json()["results"]["files"][0]["url"]
        assert h.http.get(url).status_code == 403
    assert h.stats()["downloads"]["refused_forever"] == 3


def test_after_the_retention_a_replay_is_new_work_billed_twice(make_harness: MakeHarness) -> None:
    """With a 5 s idempotency retention, the same key and body 12 s later create a second job
    and the sandbox counts every row of it billed twice."""
    h = make_harness(faults=FaultConfig(idempotency_retention_seconds=5.0), fail_rate=0.0)
    first = job(h, 10, "same-key")["batch_id"]
    h.tick(2.0)
    assert job(h, 10, "same-key")["batch_id"] == first  # within retention: a replay
    h.tick(10.0)
    second = job(h, 10, "same-key")["batch_id"]
    billed = h.stats()["keys"][KEY]["billed"]
    assert second != first and billed["rows_billed_twice"] == 10
    assert h.get("/_sandbox/ledger").json()[KEY[-4:]]["rows_billed_twice"]["enrich:p0"] == 2


def test_html_503_and_sync_resets_after_billing(make_harness: MakeHarness) -> None:
    """html_503 answers an HTML page; a sync reset bills the place and answers nothing."""
    h = make_harness(faults=FaultConfig(html_503_rate=1.0))
    r = h.post("/v1/validate", json=place(1))
    assert r.status_code == 503 and r.text.startswith("<html>")
    h.sandbox.backend.set_faults(FaultConfig(sync_reset_after_rate=1.0))
    with pytest.raises(Exception, match="disconnected"):
        h.post("/v1/validate", json=place(2))
    assert h.credits()["charged"] == 1


def test_unknown_fields_appear_in_answers(make_harness: MakeHarness) -> None:
    """Answers carry fields (and a usage period) the spec never names."""
    h = make_harness(faults=FaultConfig(unknown_fields=True))
    batch = job(h, 3, "odd")["batch_id"]
    status = h.get(f"/v1/jobs/{batch}").json()
    assert status["x_region"] and status["progress"]["x_note"]
    assert status["results"]["files"][0]["storage_class"] == "STANDARD_IA"
    assert h.get("/v1/usage").json()["period"] == "rolling_30_days"
