"""A sandbox's state kept in a folder (`emulator.keep`): a sandbox started again on it carries
on with the jobs, idempotency records, credits, ledger and rows billed of the one before, and
no two sandboxes give out the same job id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from placeflow.emulator import KeySpec, ManualClock, Sandbox, SandboxConfig
from placeflow.emulator.keep import ENDED_KEPT_SECONDS, SandboxStore

from .conftest import KEY, place

CLOCK = 1_790_000_000.0


@contextmanager
def kept(folder: Path, clock: ManualClock) -> Iterator[tuple[Sandbox, httpx.Client]]:
    """A sandbox keeping its state in `folder` (taken for the block), and a client of it."""
    store = SandboxStore(folder)
    assert store.acquire()
    try:
        config = SandboxConfig(keys=(KeySpec(key=KEY),), clock=clock, rows_per_second=10.0)
        sandbox = Sandbox(config, store=store)
        with httpx.Client(
            transport=sandbox.transport(), base_url=sandbox.base_url, headers={"X-API-Key": KEY}
        ) as http:
            yield sandbox, http
        assert not sandbox.backend.internal_errors, sandbox.backend.internal_errors[-1]
    finally:
        store.release()


def _job(http: httpx.Client, pois: list[dict[str, Any]], key: str) -> dict[str, Any]:
    reply = http.post("/v1/jobs/enrich", json={"pois": pois}, headers={"Idempotency-Key": key})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_a_sandbox_started_again_carries_on_with_the_state_kept(tmp_path: Path) -> None:
    """Jobs, idempotency records, credits and rows billed survive the sandbox's process: the
    job running when it stopped ends on the clock and its file is served, the same POST is
    replayed (no second hold), usage and the ledger are continuous, nothing is billed twice."""
    clock, folder = ManualClock(CLOCK), tmp_path / "wh.duckdb.sandbox"
    pois = [place(i) for i in range(20)]
    with kept(folder, clock) as (first, http):
        assert not first.restored
        job = _job(http, pois, "idem-1")
        assert http.post("/v1/enrich-batch", json={"pois": [place(100)]}).status_code == 200
        clock.advance(1.0)  # 10 of the 20 rows processed when the process goes
        assert http.get(f"/v1/jobs/{job['batch_id']}").json()["status"] == "running"
        used = http.get("/v1/usage").json()["current_usage"]
    assert used == 21  # 20 held, 1 charged
    clock.advance(5.0)
    with kept(folder, clock) as (again, http):
        assert again.restored
        assert http.get("/v1/usage").json()["current_usage"] == 21  # the job ended: 20 charged
        replay = http.post(
            "/v1/jobs/enrich", json={"pois": pois}, headers={"Idempotency-Key": "idem-1"}
        )
        assert replay.json()["batch_id"] == job["batch_id"]
        assert replay.headers["Idempotent-Replayed"] == "true"
        status = http.get(f"/v1/jobs/{job['batch_id']}").json()
        assert status["status"] == "completed" and status["progress"]["processed"] == 20
        with httpx.Client(transport=again.transport()) as files:
            file = files.get(status["results"]["files"][0]["url"])
        assert (
            file.status_code == 200
            and len(file.content) == status["results"]["files"][0]["size_bytes"]
        )
        stats = again.stats()
    credits = stats["keys"][KEY]["credits"]
    assert credits["held"] == 0 and credits["held_total"] == 20
    billed = stats["keys"][KEY]["billed"]
    assert billed["rows"] == 21 and billed["rows_billed_twice"] == 0
    assert stats["idempotent_replays"] == 1 and stats["jobs"]["created"] == 1
    assert stats["requests"]["POST /v1/jobs/enrich"] == {"200": 2}  # counts kept too


def test_a_ledger_line_the_snapshot_does_not_cover_is_cut_off(tmp_path: Path) -> None:
    """Ledger lines written after the last snapshot (a process killed between the two) are not
    taken up: what the sandbox started again shows is what the last reply showed."""
    clock, folder = ManualClock(CLOCK), tmp_path / "kept"
    with kept(folder, clock) as (_, http):
        assert http.post("/v1/enrich-batch", json={"pois": [place(1)]}).status_code == 200
    ledger = folder / "ledger.jsonl"
    size = ledger.stat().st_size
    with ledger.open("a") as f:  # a commit's ledger line whose snapshot never landed
        f.write('{"key":"x","entries":[[1,"charge",5,"req_lost"]],"rows":["enrich:lost"]}\n')
    with kept(folder, clock) as (again, http):
        assert http.get("/v1/usage").json()["current_usage"] == 1
        assert again.stats()["keys"][KEY]["billed"]["rows"] == 1
    assert ledger.stat().st_size == size  # cut off; a usage read adds nothing
    assert "req_lost" not in ledger.read_text()


def test_a_folder_held_by_a_live_sandbox_is_not_taken_twice(tmp_path: Path) -> None:
    """Only one live sandbox keeps a folder: a second store of it is refused until released."""
    first, second = SandboxStore(tmp_path / "k"), SandboxStore(tmp_path / "k")
    assert first.acquire()
    try:
        assert not second.acquire()
    finally:
        first.release()
    assert second.acquire()
    second.release()


def test_no_two_sandboxes_give_out_the_same_job_id() -> None:
    """Two fresh sandboxes of one seed answer their first job with different batch_ids (the
    id of a job one sandbox gave is never another's, whatever a warehouse holds)."""
    ids = set()
    for _ in range(2):
        sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),), clock=ManualClock(CLOCK)))
        with httpx.Client(
            transport=sandbox.transport(), base_url=sandbox.base_url, headers={"X-API-Key": KEY}
        ) as http:
            ids.add(_job(http, [place(1)], "same-key")["batch_id"])
    assert len(ids) == 2


def test_jobs_that_ended_long_ago_are_not_taken_up(tmp_path: Path) -> None:
    """A job that ended more than ENDED_KEPT_SECONDS before the sandbox starts again is let go
    with its idempotency record and its places' file (as a real service's retention): its
    reads answer 404, and the same POST is new work; what it billed stays billed."""
    clock, folder = ManualClock(CLOCK), tmp_path / "kept"
    with kept(folder, clock) as (_, http):
        job = _job(http, [place(i) for i in range(5)], "idem-old")
        clock.advance(1.0)
        assert http.get(f"/v1/jobs/{job['batch_id']}").json()["status"] == "completed"
    clock.advance(ENDED_KEPT_SECONDS + 1)
    with kept(folder, clock) as (again, http):
        assert http.get(f"/v1/jobs/{job['batch_id']}").status_code == 404
        anew = _job(http, [place(i) for i in range(5)], "idem-old")
        assert anew["batch_id"] != job["batch_id"]
        assert again.stats()["keys"][KEY]["credits"]["charged"] == 5
    assert not (folder / "jobs" / f"{job['batch_id']}.json.gz").exists()
