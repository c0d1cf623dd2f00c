"""Research's stages between dedupe and the first request, on the rows the run's staging left
(`placeflow.runner.prepare.gather`: read, normalize and dedupe): its sample, its plan of
requests (`plan`), and its opening (`open_research`): the run, its rows, rejects and places and
its requests recorded in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import polars as pl

from placeflow.fields import PLACE_FIELDS
from placeflow.pipeline.plan import Estimate, PlanInfo
from placeflow.pipeline.research.plan import (
    ROUTE,
    Rates,
    ResearchSpec,
    estimate,
    plan_requests,
    requests_of,
)
from placeflow.state.runbook import RunBook
from placeflow.state.runstate import record_rows
from placeflow.store.warehouse import insert_frame, transaction

ROW_FIELDS = (*PLACE_FIELDS, "phone", "website")
"""A row's normalised fields, kept in run_rows as a run of files keeps them (its match-only
phone and website too): `placeflow rows` and the crosswalk show the place each row named."""


@dataclass(frozen=True)
class Prepared:
    """A research's plan, before anything is written: every input row's disposition, the
    rejects, the planned places (with their requests), the rows read and the estimate."""

    run_rows: pl.DataFrame
    rejects: pl.DataFrame
    plan: pl.DataFrame
    rows_read: int
    estimate: Estimate

    def counts(self) -> dict[str, int]:
        """The run's counts of its rows (a runs row's columns)."""
        by = dict(self.run_rows.group_by("disposition").len().iter_rows())
        return {
            "rows_read": self.rows_read,
            "rejected": by.get("rejected", 0),
            "duplicates": by.get("duplicate", 0),
            "skipped_fresh": by.get("skipped_fresh", 0),
            "submitted": self.plan.height,
        }


def sampled(
    deduped: pl.DataFrame, rejects: pl.DataFrame, sample: int | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A first look (`--sample N`): the rows up to the N-th place to research."""
    if sample is None:
        return deduped, rejects
    firsts = deduped.filter(pl.col("disposition") == "submitted").sort("row_ord").head(sample)
    if firsts.height < sample:
        return deduped, rejects
    last = int(firsts.get_column("row_ord")[-1])  # sorted: the last is the largest
    return deduped.filter(pl.col("row_ord") <= last), rejects.filter(pl.col("row_ord") <= last)


def plan(
    marked: pl.DataFrame, rejects: pl.DataFrame, spec: ResearchSpec, rates: Rates
) -> tuple[Prepared, PlanInfo]:
    """The plan stage: the places to send (in input order) in requests of up to 10, every
    input row's disposition, the estimate."""
    to_send = marked.filter(pl.col("disposition") == "submitted").sort("row_ord")
    planned = plan_requests(to_send, spec, rates)
    requests = int(planned.get_column("request_no").n_unique()) if planned.height else 0
    run_rows = pl.concat(
        [
            marked.select(
                "row_ord", "source_file", "source_row", "source_id", "place_key", "disposition",
                pl.when(pl.col("disposition") == "duplicate")
                .then(pl.lit("same place as row ") + pl.col("first_row_ord").cast(pl.String))
                .alias("note"),
                "own_key", "matched_row", "match_rule", "match_probability", "core_key",
                *ROW_FIELDS,
            ),
            rejects.select(
                "row_ord", "source_file", "source_row", "source_id",
                pl.lit(None, pl.String).alias("place_key"), pl.lit("rejected").alias("disposition"),
                pl.col("reason").alias("note"), pl.lit(None, pl.String).alias("own_key"),
                pl.lit(None, pl.String).alias("match_rule"),
                pl.lit(None, pl.Float64).alias("match_probability"),
            ),
        ],
        how="diagonal_relaxed",  # a reject has no place: its place columns are null
    ).sort("row_ord")  # fmt: skip
    rows_read = marked.height + rejects.height
    prepared = Prepared(
        run_rows, rejects, planned, rows_read, estimate(planned.height, spec, rates)
    )
    return prepared, PlanInfo(places=planned.height, chunks=requests, route=ROUTE)


def open_research(con: duckdb.DuckDBPyConnection, prepared: Prepared, run: dict[str, Any]) -> None:
    """The open stage: the run (a runs row's columns, with its counts: `Prepared.counts`), its
    rows, rejects and places, and its requests `planned`, in one transaction."""
    run_id, now = run["run_id"], run["created_at"]
    with transaction(con):
        RunBook(con, run_id).record(run)
        record_rows(
            con,
            run_id,
            {
                "run_rows": prepared.run_rows,
                "rejects": prepared.rejects.select(
                    "row_ord", "source_file", "source_row", "source_id", "field", "reason", "raw"
                ),
                "run_places": prepared.plan.select(
                    "place_key", pl.col("request_no").alias("chunk_no"), "position", "request"
                ),
            },
        )
        insert_frame(
            con,
            "research_requests",
            requests_of(prepared.plan).with_columns(
                pl.lit(run_id).alias("run_id"),
                pl.lit("planned").alias("state"),
                pl.lit(now).alias("planned_at"),
            ),
        )
