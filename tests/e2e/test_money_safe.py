"""Issue 11, the pipeline half: a run against a service that reads the spec otherwise stays
money-safe. Each test serves the sandbox on loopback on a manual clock shared with the client
(real HTTP, virtual time) and asserts on what the sandbox itself billed and counted."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.api.poller import FILES_AFTER
from placeflow.emulator import FaultConfig
from placeflow.events import ChunkSubmitted, Event, Note
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.reporting.summary import exit_code_for

from .virtual_rig import Rig, rig, write_places

__all__ = ["rig"]  # the fixture


def go(r: Rig, csv_path: Path, db: Path, **options: Any) -> RunSummary:
    events: list[Event] = []
    return placeflow.run(
        [str(csv_path)], options=RunOptions(force=True, **options), db=db,
        target=r.target, clock=r.now, on_event=events.append,
    )  # fmt: skip


def ledger(db: Path) -> dict[str, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select kind, sum(credits) from credit_ledger group by kind").fetchall()
    return {str(k): int(v) for k, v in rows}


def test_ledger_balances_to_usage_and_learns_unbilled_null_status(rig: Any, tmp_path: Path) -> None:
    """A service that does not bill all-null status rows: the ledger is adjusted to its usage
    (charges + adjustments = what it billed), and the next run settles that shape as it does."""
    r = rig(FaultConfig(null_status_rate=0.3, bill_null_status=False), rows_per_second=50.0)
    f, db = write_places(tmp_path / "p.csv", 90), tmp_path / "wh.duckdb"
    s = go(r, f, db, mode="enrich", route="job", chunk_rows=30)
    assert s.status == "completed", s.message
    assert s.difference is not None and s.difference < 0 and s.adjustment == s.difference
    assert s.ledger_vs_usage == 0 and "status held only nulls" in (s.message or "")
    kinds = ledger(db)
    assert kinds["charge"] + kinds["adjustment"] == r.billed_credits()
    with duckdb.connect(str(db), read_only=True) as con:
        view = con.execute("select difference, adjustment, ledger_vs_usage from run_credits")
        assert view.fetchall() == [(s.difference, s.adjustment, 0)]
        learnt = con.execute("select shape, billed from billing_readings").fetchall()
    assert learnt == [("null_status", False)]
    again = go(r, write_places(tmp_path / "q.csv", 60), db, mode="enrich", route="job")
    assert again.difference == 0 and again.adjustment == 0, again.message
    assert ledger(db)["charge"] + ledger(db)["adjustment"] == r.billed_credits()


def test_one_refused_result_file_holds_only_its_own_chunk(rig: Any, tmp_path: Path) -> None:
    """The file origin refuses one job's file forever: every other chunk loads, the run ends
    interrupted naming that chunk and why."""
    r = rig(rows_per_second=50.0)
    refused: list[int] = []

    def on_event(event: Event) -> None:
        if isinstance(event, ChunkSubmitted) and event.chunk_no == 1 and event.batch_id:
            r.sandbox.backend.refuse_file(event.batch_id)
            refused.append(event.chunk_no)

    f, db = write_places(tmp_path / "p.csv", 100), tmp_path / "wh.duckdb"
    s = placeflow.run(
        [str(f)], options=RunOptions(route="job", chunk_rows=20), db=db, target=r.target,
        clock=r.now, on_event=on_event,
    )  # fmt: skip
    assert refused == [1]
    assert s.status == "interrupted" and "chunk 1" in (s.message or "")
    assert "ResultUnavailable" in (s.message or "")
    with duckdb.connect(str(db), read_only=True) as con:
        states = dict(con.execute("select chunk_no, status from jobs").fetchall())
    assert {k: v for k, v in states.items() if k != 1} == {
        0: "loaded",
        2: "loaded",
        3: "loaded",
        4: "loaded",
    }
    assert states[1] == "completed"
    assert r.rows_billed_twice() == 0


def test_sync_resets_after_processing_never_pay_twice(rig: Any, tmp_path: Path) -> None:
    """Synchronous batches whose answers are lost after billing are never re-sent blind: the
    sandbox bills no row twice, and the held chunks are named."""
    r = rig(FaultConfig(seed=3, sync_reset_after_rate=0.3))
    f, db = write_places(tmp_path / "p.csv", 100), tmp_path / "wh.duckdb"
    s = go(r, f, db, mode="enrich", route="sync")
    assert r.rows_billed_twice() == 0
    key = r.key()
    assert key["billed"]["rows"] == key["billed"]["distinct_rows"]
    if s.status == "interrupted":
        assert "uncertain" in (s.message or "")
    kinds = ledger(db)
    assert kinds.get("charge", 0) <= r.billed_credits()


def test_usage_unknown_at_the_end_does_not_fail_done_work(rig: Any, tmp_path: Path) -> None:
    """A burst of 5xx on GET /v1/usage at the end: the run completes, usage_after is unknown
    (null) in the summary and in runs, and a message says so."""
    r = rig(rows_per_second=50.0)
    loaded: list[int] = []

    def on_event(event: Event) -> None:
        if type(event).__name__ == "RowsLoaded":
            loaded.append(1)
            if len(loaded) == 2:  # the last chunk loaded: the service goes down for usage
                r.sandbox.backend.set_faults(FaultConfig(error_503_rate=1.0))

    f, db = write_places(tmp_path / "p.csv", 40), tmp_path / "wh.duckdb"
    s = placeflow.run(
        [str(f)], options=RunOptions(route="job", chunk_rows=20), db=db, target=r.target,
        clock=r.now, on_event=on_event,
    )  # fmt: skip
    assert s.status == "completed" and s.succeeded + s.failed == 40
    assert s.usage_after is None and s.usage_delta is None
    assert "usage after the run is unknown" in (s.message or "")
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("select status, usage_after, message from runs").fetchone()
    assert row is not None and row[0] == "completed" and row[1] is None
    assert "unknown" in str(row[2])


def test_stuck_job_is_cancelled_and_its_processed_rows_loaded(rig: Any, tmp_path: Path) -> None:
    """A job whose progress stops is taken as stuck after --stuck-after: cancelled at the
    sandbox, its chunk marked stuck, its processed rows loaded, the rest reported."""
    r = rig(FaultConfig(seed=5, job_stall_rate=1.0), rows_per_second=20.0)
    f, db = write_places(tmp_path / "p.csv", 40), tmp_path / "wh.duckdb"
    s = go(r, f, db, route="job", chunk_rows=40, stuck_after=60.0)
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("select status, error_code, rows_loaded, error from jobs").fetchone()
    assert row is not None and row[0] == "loaded" and row[1] == "STUCK"
    assert 0 < int(row[2]) < 40 and "stuck" in str(row[3])
    assert s.status == "completed_with_failures" and s.not_answered == 40 - int(row[2])
    assert r.sandbox.stats()["requests"].get("DELETE /v1/jobs/{batch_id}")
    assert ledger(db)["charge"] == r.billed_credits()


@pytest.mark.parametrize("midway", [False, True], ids=["completed", "failed-part-way"])
def test_a_file_that_never_shows_holds_its_chunk_until_a_resume_finds_it(
    rig: Any, tmp_path: Path, midway: bool
) -> None:
    """Jobs end (completed; or failed half way, their processed rows billed) and show no result
    file to their first 7 reads after they end, all the poller makes (1 + FILES_AFTER): the
    run ends interrupted with every hold kept, nothing released or sent again; the resume
    reads each job once more, finds its file and loads it; a failed job's unprocessed half
    goes to the next run. The sandbox bills each row once, and the ledger balances to it."""
    faults = FaultConfig(results_late_reads=1 + FILES_AFTER, job_fail_midway_rate=float(midway))
    r = rig(faults, rows_per_second=50.0, fail_rate=0.0)
    f, db = write_places(tmp_path / "p.csv", 40), tmp_path / "wh.duckdb"
    s = go(r, f, db, route="job", chunk_rows=20)
    assert s.status == "interrupted" and "shows no result file yet" in (s.message or "")
    assert (s.succeeded, s.charged, s.released, s.held) == (0, 0, 0, 40)
    billed = 20 if midway else 40
    assert r.billed_credits() == billed
    r.clock.advance(600.0)
    done = placeflow.resume(s.run_id, db=db, target=r.target, clock=r.now)
    assert done.succeeded == billed and done.not_answered == 40 - billed
    assert done.status == ("completed_with_failures" if midway else "completed")
    assert r.sandbox.stats()["jobs"]["created"] == 2  # nothing was sent again
    assert r.rows_billed_twice() == 0 and ledger(db)["charge"] == r.billed_credits() == billed


def test_resend_uncertain_sends_a_chunk_whose_file_never_shows_again(
    rig: Any, tmp_path: Path
) -> None:
    """A job's file never shows: the chunk stays held through a plain resume; `resume
    --resend-uncertain` looks once more, then sends its places again as a new job, counting
    them as possible extra credits (the user's choice: the sandbox bills them twice)."""
    r = rig(FaultConfig(results_late_reads=1_000), rows_per_second=50.0, fail_rate=0.0)
    f, db = write_places(tmp_path / "p.csv", 20), tmp_path / "wh.duckdb"
    s = go(r, f, db, route="job", chunk_rows=20)
    again = placeflow.resume(s.run_id, db=db, target=r.target, clock=r.now)
    assert again.status == "interrupted" and r.sandbox.stats()["jobs"]["created"] == 1
    notes: list[Event] = []
    sent = placeflow.resume(
        s.run_id, db=db, target=r.target, clock=r.now, resend_uncertain=True,
        on_event=notes.append,
    )  # fmt: skip
    assert r.sandbox.stats()["jobs"]["created"] == 2 and sent.possible_extra_credits == 20
    assert r.key()["billed"]["rows_billed_twice"] == 20  # as the user accepted
    said = [e.message for e in notes if isinstance(e, Note)]
    assert any("showed no result file for its processed rows; its places are sent" in t
               for t in said), said  # fmt: skip


def test_results_split_across_files_are_loaded_whole(rig: Any, tmp_path: Path) -> None:
    """`result_parts=4`: every job's result comes as four files; the run verifies each, loads
    every row at its planned position and records the joined file's sha256 (what a resume
    checks the file on disk against). The file origin served each part once."""
    r = rig(FaultConfig(result_parts=4), rows_per_second=50.0, fail_rate=0.0)
    f, db = write_places(tmp_path / "p.csv", 60), tmp_path / "wh.duckdb"
    s = go(r, f, db, mode="enrich", route="job", chunk_rows=30)
    assert s.status == "completed" and s.succeeded == 60, s.message
    assert r.sandbox.stats()["downloads"]["served"] == 2 * 4
    with duckdb.connect(str(db), read_only=True) as con:
        files = con.execute("select result_path, result_sha256 from jobs").fetchall()
        loaded = con.execute("select count(*) from enrichments where success").fetchall()
    assert loaded == [(60,)]
    for path, sha256 in files:
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == sha256
    assert ledger(db)["charge"] == r.billed_credits()


def test_lost_post_after_retention_is_not_paid_twice(rig: Any, tmp_path: Path) -> None:
    """Every answer of a job POST is lost: it is replayed within the idempotency window (10 s)
    and then held as uncertain, the run ends interrupted; resumed after the service forgot the
    Idempotency-Key (retention 20 s, resume 30 s later): no second job is bought blind, and
    the ledger books what the lost job cost from the usage."""
    r = rig(FaultConfig(idempotency_retention_seconds=20.0), rows_per_second=50.0)

    def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if name != "submit":
            return fn

        def submit_losing_answers(*args: Any, **kwargs: Any) -> Any:
            r.sandbox.backend.set_faults(
                FaultConfig(idempotency_retention_seconds=20.0, drop_response_rate=1.0)
            )
            return fn(*args, **kwargs)

        return submit_losing_answers

    f, db = write_places(tmp_path / "p.csv", 20), tmp_path / "wh.duckdb"
    first = placeflow.run(
        [str(f)], options=RunOptions(route="job", chunk_rows=20, idempotency_window=10.0),
        db=db, target=r.target, clock=r.now, step=step,
    )  # fmt: skip
    assert first.status == "interrupted" and "uncertain" in (first.message or "")
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute("select sending_at, error_code from jobs").fetchone()
    assert found is not None and found[0] is not None and found[1] == "UNCERTAIN"
    r.sandbox.backend.set_faults(FaultConfig(idempotency_retention_seconds=20.0))
    r.clock.advance(30.0)
    s = placeflow.resume(first.run_id, db=db, target=r.target, clock=r.now)
    assert r.rows_billed_twice() == 0
    assert r.sandbox.stats()["jobs"]["created"] == 1
    assert s.status == "interrupted" and "uncertain" in (s.message or "")
    kinds = ledger(db)
    assert kinds.get("charge", 0) + kinds["adjustment"] == r.billed_credits() > 0


def test_a_research_answer_lost_while_usage_is_down_is_settled_by_the_next_run(
    rig: Any, tmp_path: Path
) -> None:
    """The first deep-research answer is lost after billing and GET /v1/usage then fails for
    the client's whole patience: the run stops (exit 1) saying so, the request kept as sent,
    its summary's usage unknown, instead of raising. The same command later reads the usage,
    settles the lost request as billed, and researches the rest: nothing billed twice."""
    from placeflow.emulator.research import research_stats
    from placeflow.pipeline.research.fields import build_specs
    from placeflow.pipeline.research.plan import ResearchSpec
    from placeflow.runner.research import ResearchOptions, research

    from .virtual_rig import PATIENCE

    r = rig(fail_rate=0.0)
    f, db = write_places(tmp_path / "p.csv", 12), tmp_path / "wh.duckdb"  # 2 requests: 10 + 2
    options = ResearchOptions(spec=ResearchSpec(build_specs(("cuisine:string",))))

    def usage_down(moment: str, sent: int) -> None:
        if moment == "sent" and sent == 1:  # the lost answer's settling and the summary's read
            r.sandbox.inject("POST /v1/deep-research", "drop_response")
            r.sandbox.inject("GET /v1/usage", "503", times=2 * PATIENCE.max_attempts)

    def go_research(**hook: Any) -> tuple[RunSummary, int]:
        summary = research([str(f)], options, target=r.target, db=db, sleep=r.clock.sleep,
                           clock=r.now, **hook)  # fmt: skip
        return summary, exit_code_for(summary.status)  # stopped part way: not raised, exit 1

    first, first_code = go_research(hook=usage_down)
    assert first_code == 1 and "usage cannot be read now" in first.message
    assert "usage after the run is unknown" in first.message
    assert research_stats(r.sandbox.backend)["billed_places"] == 10  # billed, answer lost
    r.clock.advance(60.0)
    second, _second_code = go_research()
    stats = research_stats(r.sandbox.backend)
    assert second.run_id == first.run_id and stats["billed_places"] == 12
    assert stats["billed_twice"] == [] and stats["requests"]["answered"] == 2
    assert second.charged == r.billed_credits()
