"""Issue 34, the money edges a red team found, held over real loopback HTTP on virtual time:
each test asserts on what the sandbox itself billed and counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

import placeflow
from placeflow.emulator import FaultConfig
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary

from .virtual_rig import Rig, rig, write_places

__all__ = ["rig"]  # the fixture


def go(r: Rig, csv_path: Path, db: Path, **options: Any) -> RunSummary:
    return placeflow.run(
        [str(csv_path)], options=RunOptions(force=True, **options), db=db, target=r.target,
        clock=r.now,
    )  # fmt: skip


def ledger(db: Path) -> dict[str, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select kind, sum(credits) from credit_ledger group by kind").fetchall()
    return {str(k): int(v) for k, v in rows}


def test_unknown_fields_never_make_a_row_billable(rig: Any, tmp_path: Path) -> None:
    """Item 6: result lines carry fields the spec never names (at the top, and a status object
    of only such a field on rows without data): each chunk's charge is the rows the sandbox
    billed by the spec's fields, so the ledger equals the charge before any adjustment."""
    r = rig(FaultConfig(unknown_fields=True), rows_per_second=50.0)
    f, db = write_places(tmp_path / "p.csv", 90), tmp_path / "wh.duckdb"
    s = go(r, f, db, mode="enrich", route="job", chunk_rows=30, attributes=("phone", "website"))
    assert s.status == "completed", s.message
    assert 0 < r.billed_credits() < 90  # some rows had no phone and no website: not billed
    assert ledger(db)["charge"] == r.billed_credits() == s.charged
    assert (s.difference, s.adjustment, s.ledger_vs_usage) == (0, 0, 0)
    with duckdb.connect(str(db), read_only=True) as con:
        billable = con.execute("select count(*) from enrichments where billable").fetchall()
    assert billable == [(r.billed_credits(),)]


def test_lost_sync_answers_are_booked_and_the_message_names_what_settles_them(
    rig: Any, tmp_path: Path
) -> None:
    """Item 5: synchronous batches processed and billed, their answers lost: the run stops
    interrupted; the usage books what they cost as a named adjustment (ledger = what the
    sandbox billed), `possible_extra_credits` counts their rows, and the message names
    `placeflow resume RUN --resend-uncertain`. A plain resume sends nothing again; the resume
    it names buys them again (billed twice, as accepted) and completes, the ledger still
    equal to the sandbox's billing."""
    r = rig(FaultConfig(seed=3, sync_reset_after_rate=0.3), fail_rate=0.0)
    f, db = write_places(tmp_path / "p.csv", 100), tmp_path / "wh.duckdb"
    s = go(r, f, db, mode="enrich", route="sync")
    assert r.rows_billed_twice() == 0
    lost = 100 - s.succeeded
    assert s.status == "interrupted" and lost > 0, s.message
    assert s.possible_extra_credits == lost
    command = f"placeflow resume {s.run_id} --resend-uncertain"
    assert command in (s.message or "") and "retries them" not in (s.message or "")
    kinds = ledger(db)
    assert kinds["charge"] + kinds["adjustment"] == r.billed_credits() == 100
    assert s.adjustment == lost and s.ledger_vs_usage == 0
    with duckdb.connect(str(db), read_only=True) as con:
        (note,) = con.execute("select note from credit_ledger where kind = 'adjustment'").fetchone()
    assert "answers were lost" in note
    again = placeflow.resume(s.run_id, db=db, target=r.target, clock=r.now)
    assert again.status == "interrupted" and r.billed_credits() == 100
    assert ledger(db)["adjustment"] == lost  # booked once
    bought = placeflow.resume(s.run_id, db=db, target=r.target, clock=r.now, resend_uncertain=True)
    assert bought.status == "completed" and bought.succeeded == 100, bought.message
    assert r.rows_billed_twice() == lost and r.billed_credits() == 100 + lost
    assert bought.possible_extra_credits == lost
    kinds = ledger(db)
    assert kinds["charge"] + kinds["adjustment"] == r.billed_credits()


def test_a_lost_post_is_replayed_at_once_while_the_service_keeps_its_key(
    rig: Any, tmp_path: Path
) -> None:
    """Issue 44 item 1: the service keeps Idempotency-Keys 0.5 s; the first chunk's POST is
    processed and its answer lost three times in a row. The replays go at once (20 ms apart),
    not after a backoff of 0.5 to 2 s, so the fourth attempt re-attaches to the job the first
    created: one job per chunk, no row billed twice, the run completes and its ledger equals
    what the sandbox billed."""
    r = rig(FaultConfig(idempotency_retention_seconds=0.5), rows_per_second=50.0, fail_rate=0.0)
    r.sandbox.inject("POST /v1/jobs/enrich", "drop_response", times=3)
    f, db = write_places(tmp_path / "p.csv", 60), tmp_path / "wh.duckdb"
    s = go(r, f, db, route="job", mode="enrich", chunk_rows=20)
    assert s.status == "completed" and s.succeeded == 60, s.message
    stats = r.sandbox.stats()
    assert stats["jobs"]["created"] == 3 and stats["idempotent_replays"] == 3
    assert r.rows_billed_twice() == 0 and s.possible_extra_credits == 0
    assert ledger(db)["charge"] == r.billed_credits() == 60
