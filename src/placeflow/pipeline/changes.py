"""What changed about the places a run re-checked: one `place_changes` row per changed field.

Each field a run's successful outcomes answered (the `place_facts` view) is compared with the
place's previous answer of the same field, from the newest earlier successful outcome that
answered it (a validation and an enrichment both answer operational_status and existence; only
enrichments that asked for phone answer phone, and so on). The noise rules (docs/warehouse.md,
"Changes: what counts") decide what counts as a change: confidences never do; a coordinate must
move 50 m; phones are compared by their digits, websites by host and path, opening hours in a
canonical form. A failed outcome answers nothing, so it neither is nor hides a change.

`record_changes` is idempotent: a run's changes are inserted once, however often it is called.
The SQL lives in sql/changes/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from placeflow.errors import OptionsError
from placeflow.store.warehouse import sql_text, transaction

DETECTED = "detected_changes"
"""The temp table sql/changes/insert.sql reads the run's detected changes from."""


@dataclass(frozen=True)
class ChangeInfo:
    """The changes recorded for one run."""

    run_id: str
    places_compared: int
    """Places of the run whose successful outcome had a previous answer to compare with."""
    places_changed: int
    """Places with at least one change."""
    changes: int
    """Change rows of the run in place_changes (after this call)."""
    inserted: int
    """Change rows this call added (0 when the run's changes were already recorded)."""
    by_field: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)


def record_changes(con: duckdb.DuckDBPyConnection, run_id: str, *, now: datetime) -> ChangeInfo:
    """Compare the run's outcomes with each place's previous answers; insert what changed."""
    if now.tzinfo is None:
        raise OptionsError("now must be timezone-aware (datetime.now(UTC))")
    if not _rechecks_a_known_place(con, run_id):  # a first look at its places: nothing to compare
        return ChangeInfo(run_id=run_id, places_compared=0, places_changed=0, changes=0, inserted=0)
    with transaction(con):
        con.execute(
            f"create or replace temp table {DETECTED} as\n" + sql_text("changes/detect"),
            {"run_id": run_id},
        )
        try:
            before = _count(con, "select count(*) from place_changes where run_id = ?", run_id)
            con.execute(sql_text("changes/insert"), {"detected_at": now})
            after = _count(con, "select count(*) from place_changes where run_id = ?", run_id)
        finally:
            con.execute(f"drop table {DETECTED}")
    return change_info(con, run_id, inserted=after - before)


def change_info(con: duckdb.DuckDBPyConnection, run_id: str, *, inserted: int = 0) -> ChangeInfo:
    """The changes place_changes holds for a run, counted by field and by kind."""
    compared = _count(con, sql_text("changes/compared"), run_id)
    rows = con.execute(
        "select field, kind, count(*) from place_changes where run_id = ? group by field, kind",
        [run_id],
    ).fetchall()
    by_field: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for name, kind, count in rows:
        by_field[str(name)] = by_field.get(str(name), 0) + int(count)
        by_kind[str(kind)] = by_kind.get(str(kind), 0) + int(count)
    changed = _count(
        con, "select count(distinct place_key) from place_changes where run_id = ?", run_id
    )
    return ChangeInfo(
        run_id=run_id,
        places_compared=compared,
        places_changed=changed,
        changes=sum(by_field.values()),
        inserted=inserted,
        by_field=dict(sorted(by_field.items())),
        by_kind=dict(sorted(by_kind.items())),
    )


def _rechecks_a_known_place(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether any place of the run has a successful outcome from another run (the comparison,
    which reads every answer of the run's places, costs seconds at 100k places otherwise)."""
    return _count(con, sql_text("changes/rechecked"), run_id) > 0


def _count(con: duckdb.DuckDBPyConnection, sql: str, run_id: str) -> int:
    rows = con.execute(sql, [run_id]).fetchall()  # fetched to the end: no result left open
    return int(rows[0][0]) if rows else 0
