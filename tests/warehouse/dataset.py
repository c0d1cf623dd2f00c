"""A small, consistent warehouse: two completed runs, every check passes on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from placeflow.pipeline.load import load_result
from placeflow.store.warehouse import insert_frame
from tests.warehouse.helpers import (
    T0,
    add_run,
    enrich_line,
    plan_chunk,
    validate_line,
    write_lines,
)


def add_rows(
    con: duckdb.DuckDBPyConnection, run_id: str, rows: list[tuple[str | None, str]]
) -> None:
    """run_rows of a run from (place_key, disposition) pairs, and a rejects row per rejected."""
    insert_frame(
        con,
        "run_rows",
        pl.DataFrame(
            {
                "run_id": run_id,
                "row_ord": list(range(len(rows))),
                "source_file": "in.csv",
                "source_row": [i + 1 for i in range(len(rows))],
                "place_key": [k for k, _ in rows],
                "disposition": [d for _, d in rows],
            }
        ),
    )
    rejected = [i for i, (_, d) in enumerate(rows) if d == "rejected"]
    if rejected:
        insert_frame(
            con,
            "rejects",
            pl.DataFrame(
                {
                    "run_id": run_id,
                    "row_ord": rejected,
                    "source_file": "in.csv",
                    "source_row": [i + 1 for i in rejected],
                    "field": "poi_name",
                    "reason": "poi_name is empty",
                    "raw": '{"name": ""}',
                }
            ),
        )


def load(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    chunk_no: int,
    kind: str,
    path: Path,
    billing: str,
    held: int,
    **kwargs: Any,
) -> None:
    load_result(
        con,
        run_id=run_id,
        chunk_no=chunk_no,
        kind=kind,  # type: ignore[arg-type]  # a str here, load_result's Literal there
        path=path,
        billing=billing,  # type: ignore[arg-type]  # the same
        held=held,
        ref=f"{run_id}-{chunk_no}" if billing == "sync" else f"job_{run_id}_{chunk_no}",
        now=kwargs.pop("now", T0),
        **kwargs,
    )


def build_clean(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """r1 (enrich): a job chunk (A ok, B failed) and a sync chunk (C); r2 (validate): D, E."""
    add_run(
        con,
        "r1",
        "enrich",
        rows_read=6,
        rejected=1,
        duplicates=1,
        skipped_fresh=1,
        submitted=3,
        credits_estimated=3,
        usage_before=1000,
    )
    add_rows(
        con,
        "r1",
        [
            ("A", "submitted"),
            ("B", "submitted"),
            ("A", "duplicate"),
            (None, "rejected"),
            ("Z", "skipped_fresh"),
            ("C", "submitted"),
        ],
    )
    plan_chunk(con, "r1", 0, ["A", "B"])
    plan_chunk(con, "r1", 1, ["C"], route="sync")
    job = write_lines(
        tmp_path / "r1-0.jsonl.gz", [enrich_line("A"), enrich_line("B", success=False)]
    )
    load(con, "r1", 0, "enrich", job, "job", 2)
    load(
        con,
        "r1",
        1,
        "enrich",
        write_lines(tmp_path / "r1-1.jsonl.gz", [enrich_line("C")]),
        "sync",
        0,
    )
    con.execute(
        "update runs set status = 'completed', succeeded = 2, failed = 1,"
        " usage_after = 1002, finished_at = ? where run_id = 'r1'",
        [T0],
    )

    add_run(con, "r2", "validate", rows_read=2, submitted=2, credits_estimated=2, usage_before=1002)
    add_rows(con, "r2", [("D", "submitted"), ("E", "submitted")])
    plan_chunk(con, "r2", 0, ["D", "E"], kind="validate")
    path = write_lines(tmp_path / "r2-0.jsonl.gz", [validate_line("D"), validate_line("E")])
    load(con, "r2", 0, "validate", path, "job", 2)
    con.execute(
        "update runs set status = 'completed', succeeded = 2, failed = 0,"
        " usage_after = 1004, finished_at = ? where run_id = 'r2'",
        [T0],
    )
