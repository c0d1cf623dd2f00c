"""Contract: a running job's result file is rendered in the background, ready when it completes,
and is the same file the sandbox renders when the schedule or the settings turned out otherwise."""

from __future__ import annotations

from typing import Any

from placeflow.emulator import FaultConfig

from .conftest import Harness, MakeHarness, place


def submit(h: Harness, n: int, first: int = 0) -> str:
    body = {"pois": [place(i) for i in range(first, first + n)]}
    batch: str = h.post("/v1/jobs/enrich", body).json()["batch_id"]
    return batch


def finished(h: Harness, batch: str) -> dict[str, Any]:
    status: dict[str, Any] = h.get(f"/v1/jobs/{batch}").json()
    assert status["status"] in ("completed", "cancelled"), status
    entry: dict[str, Any] = status["results"]["files"][0]
    return entry


def files(h: Harness) -> dict[str, int]:
    return dict(h.stats()["files"])


def test_jobs_running_and_queued_have_their_file_ready(make_harness: MakeHarness) -> None:
    """Two running jobs and one queued behind them are each served the file rendered while
    they ran, and it is byte for byte the file rendered when asked for."""
    h = make_harness(rows_per_second=1_000.0, max_running_jobs=2)
    batches = [submit(h, 600, first=k * 600) for k in range(3)]
    h.tick(5.0)
    entries = [finished(h, b) for b in batches]
    assert files(h) == {"rendered": 3, "prepared_ahead": 3}

    # A twin whose settings change after admission (to ones that render the same bytes: no
    # row has an all-null status) renders each file when first asked for.
    twin = make_harness(rows_per_second=1_000.0, max_running_jobs=2)
    twins = [submit(twin, 600, first=k * 600) for k in range(3)]
    twin.sandbox.backend.set_faults(FaultConfig(bill_null_status=False))
    twin.tick(5.0)
    twin_entries = [finished(twin, b) for b in twins]
    assert files(twin) == {"rendered": 3, "prepared_ahead": 0}
    assert [e["sha256"] for e in twin_entries] == [e["sha256"] for e in entries]


def test_a_cancelled_job_is_served_its_processed_rows(sb: Harness) -> None:
    """A job cancelled part way gets a file of the rows it processed, not the one prepared."""
    batch = submit(sb, 2_000)
    sb.tick(0.5)
    assert sb.http.delete(f"/v1/jobs/{batch}").json()["cancelled"]
    entry = finished(sb, batch)
    assert entry["size_bytes"] > 0
    status = sb.get(f"/v1/jobs/{batch}").json()
    assert status["results"]["total_items"] == 500
    assert files(sb) == {"rendered": 1, "prepared_ahead": 0}
