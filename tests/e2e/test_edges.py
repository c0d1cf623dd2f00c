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
