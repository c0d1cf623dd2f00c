"""Prepare a run: read, normalise, dedupe, skip what is fresh, plan, and say what it will cost.

Nothing here talks to the service or writes the warehouse: `prepare` is what `placeflow
estimate` shows, and what `record_plan` writes, in one transaction, before anything is spent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import polars as pl

from placeflow.api.models import PricingCard
from placeflow.pipeline.dedupe import dedupe
from placeflow.pipeline.fresh import fresh_keys
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.plan import (
    Estimate,
    RunOptions,
    build_requests,
    content_hash,
    estimate,
    idempotency_key,
    plan_chunks,
)
from placeflow.pipeline.read import ReadInfo, read_inputs
from placeflow.warehouse import insert_frame

RUN_ROW_COLUMNS = (
    "row_ord",
    "source_file",
    "source_row",
    "source_id",
    "place_key",
    "disposition",
    "note",
)


@dataclass(frozen=True)
class Counts:
    rows_read: int
    rejected: int
    duplicates: int
    skipped_fresh: int
    to_send: int


@dataclass(frozen=True)
class Prepared:
    """A run's plan: every input row's disposition, the rejects, and the chunks to send."""

    options: RunOptions
    inputs: tuple[str, ...]
    read: ReadInfo
    run_rows: pl.DataFrame
    rejects: pl.DataFrame
    plan: pl.DataFrame
    counts: Counts
    estimate: Estimate


def prepare(
    inputs: Sequence[str],
    options: RunOptions,
    *,
    con: duckdb.DuckDBPyConnection | None,
    now: datetime,
    pricing: PricingCard | None,
) -> Prepared:
    """Everything up to the first request; `con` (may be None) answers what is fresh."""
    rows, read_info = read_inputs(
        inputs, mapping=dict(options.mapping) or None, encoding=options.encoding
    )
    rows_read = rows.height
    places, rejects, _ = normalize(rows)
    del rows  # each stage's input is let go once used: memory peaks here at a million rows
    deduped, _ = dedupe(places)
    del places
    first = deduped.filter(pl.col("disposition") == "submitted").select("place_key")
    fresh = pl.DataFrame(schema={"place_key": pl.String})
    if con is not None and not options.force and first.height:
        fresh = fresh_keys(
            con,
            first,
            signature=options.signature,
            max_age=timedelta(days=options.max_age_days),
            now=now,
        ).select("place_key")
    is_fresh = pl.col("place_key").is_in(fresh["place_key"].implode())
    deduped = deduped.with_columns(
        pl.when((pl.col("disposition") == "submitted") & is_fresh)
        .then(pl.lit("skipped_fresh"))
        .otherwise(pl.col("disposition"))
        .alias("disposition")
    )
    to_send = deduped.filter(pl.col("disposition") == "submitted")
    plan = plan_chunks(build_requests(to_send, options), options)
    run_rows = pl.concat(
        [
            deduped.select(RUN_ROW_COLUMNS),
            rejects.select(
                "row_ord",
                "source_file",
                "source_row",
                "source_id",
                pl.lit(None, pl.String).alias("place_key"),
                pl.lit("rejected").alias("disposition"),
                pl.col("reason").alias("note"),
            ),
        ],
        how="vertical_relaxed",
    ).sort("row_ord")
    counts = Counts(
        rows_read=rows_read,
        rejected=rejects.height,
        duplicates=deduped.filter(pl.col("disposition") == "duplicate").height,
        skipped_fresh=deduped.filter(pl.col("disposition") == "skipped_fresh").height,
        to_send=plan.height,
    )
    return Prepared(
        options=options,
        inputs=tuple(str(i) for i in inputs),
        read=read_info,
        run_rows=run_rows,
        rejects=rejects,
        plan=plan,
        counts=counts,
        estimate=estimate(plan.height, options, pricing),
    )


def planned_chunks(prepared: Prepared, run_id: str, now: datetime) -> pl.DataFrame:
    """One `jobs` row per chunk: content hash and Idempotency-Key, status planned.

    The plan is in chunk and position order, so each chunk is a slice of it, hashed as the
    exact body it will be sent as (one chunk's text in memory at a time).
    """
    plan = prepared.plan  # as plan_chunks numbers it: chunk by chunk, positions in order
    if not plan.get_column("chunk_no").is_sorted():
        plan = plan.sort("chunk_no", "position")
    sizes = plan.group_by("chunk_no", maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("route").first()
    )
    records = []
    offset = 0
    for chunk_no, rows, route in sizes.iter_rows():  # one iteration per chunk, not per row
        joined = plan.slice(offset, rows).select(pl.col("request").str.join(","))
        digest = content_hash([joined.item()])
        offset += rows
        records.append(
            {
                "run_id": run_id,
                "chunk_no": chunk_no,
                "route": route,
                "kind": prepared.options.mode,
                "rows": rows,
                "content_sha256": digest,
                "idempotency_key": idempotency_key(run_id, chunk_no, digest)
                if route == "job"
                else None,
                "status": "planned",
                "created_at": now,
            }
        )
    return pl.DataFrame(records, schema_overrides={"chunk_no": pl.Int32, "rows": pl.Int32})


def record_plan(
    con: duckdb.DuckDBPyConnection, prepared: Prepared, run_id: str, now: datetime
) -> None:
    """Write the run's rows, rejects, places and planned chunks (the caller's transaction)."""
    with_run = pl.lit(run_id).alias("run_id")
    insert_frame(con, "run_rows", prepared.run_rows.with_columns(with_run))
    insert_frame(
        con,
        "rejects",
        prepared.rejects.select(
            "row_ord", "source_file", "source_row", "source_id", "field", "reason", "raw"
        ).with_columns(with_run),
    )
    insert_frame(
        con,
        "run_places",
        prepared.plan.select("place_key", "chunk_no", "position", "request").with_columns(with_run),
    )
    if prepared.plan.height:
        insert_frame(con, "jobs", planned_chunks(prepared, run_id, now))


def options_json(options: RunOptions) -> str:
    return json.dumps(
        {
            "mode": options.mode,
            "attributes": list(options.effective_attributes),
            "include_summary": options.include_summary,
            "max_credits": options.max_credits,
            "max_age_days": options.max_age_days,
            "force": options.force,
            "route": options.route,
            "chunk_rows": options.chunk_rows,
            "mapping": dict(options.mapping),
            "encoding": options.encoding,
        },
        sort_keys=True,
    )
