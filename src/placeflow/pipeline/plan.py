"""Plan a run: the exact request of each place, chunks and their routes, and what it will cost.

Requests are built once, columnar, and stored with the run, so that a resumed run sends
byte-identical bodies and its Idempotency-Keys replay instead of buying the work again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import polars as pl

from placeflow.api.models import (
    MAX_ENRICH_BATCH,
    JobKind,
    PricingCard,
)
from placeflow.options import RunOptions
from placeflow.pipeline.clusters import AUDIT_COLUMNS
from placeflow.pipeline.columns import PLACE_FIELDS

REQUEST_FIELDS = PLACE_FIELDS
"""The place fields a request carries (besides its id, the place_key)."""
JOB_MIN_REQUESTS = 3
"""A bulk job costs at least a submit, a status poll and a download."""
RUN_ROW_COLUMNS = (
    "row_ord",
    "source_file",
    "source_row",
    "source_id",
    "place_key",
    "disposition",
    "note",
)
ROW_DETAIL_COLUMNS = ("outcome_key", "core_key", *AUDIT_COLUMNS, *PLACE_FIELDS)
"""Kept in run_rows when the frame has them: whose outcome answers the row, its core key and
its normalised fields (for `placeflow rows` and the run_row_outcomes view)."""
REJECT_COLUMNS = ("row_ord", "source_file", "source_row", "source_id", "field", "reason", "raw")


@dataclass(frozen=True)
class Plan:
    """A run's plan: every input row's disposition (the kept rows in input order, then the
    rejected ones: not sorted together, since a sort would copy a million rows of every
    column), the rejects, and each place's request in its chunk (place_key, request, chunk_no,
    position, route), in chunk and position order."""

    run_rows: pl.DataFrame
    rejects: pl.DataFrame
    places: pl.DataFrame


@dataclass(frozen=True)
class PlanInfo:
    """What the plan sends: places, in how many chunks, by which route."""

    places: int
    chunks: int
    route: str


def plan(
    deduped: pl.DataFrame, rejects: pl.DataFrame, options: RunOptions
) -> tuple[Plan, PlanInfo]:
    """Plan stage: the request of each place still to send, chunked; every row's disposition."""
    to_send = deduped.lazy().filter(pl.col("disposition") == "submitted")
    details = [c for c in ROW_DETAIL_COLUMNS if c in deduped.columns]
    places = plan_chunks(build_requests(to_send, options), options)
    run_rows = pl.concat(
        [
            deduped.select(*RUN_ROW_COLUMNS, *details),
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
        how="diagonal_relaxed",
    )
    chunks = places.get_column("chunk_no").n_unique() if places.height else 0
    route = choose_route(places.height, options)
    return (
        Plan(run_rows, rejects.select(REJECT_COLUMNS), places),
        PlanInfo(places.height, chunks, route),
    )


def chunk_table(places: pl.DataFrame, *, run_id: str, kind: JobKind, now: datetime) -> pl.DataFrame:
    """One `jobs` row per chunk: content hash and Idempotency-Key, status planned.

    The plan is in chunk and position order, so each chunk is a slice of it, hashed as the
    exact body it will be sent as (one chunk's text in memory at a time).
    """
    if not places.get_column("chunk_no").is_sorted():
        places = places.sort("chunk_no", "position")
    sizes = places.group_by("chunk_no", maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("route").first()
    )
    records = []
    offset = 0
    for chunk_no, rows, route in sizes.iter_rows():  # one iteration per chunk, not per row
        joined = places.slice(offset, rows).select(pl.col("request").str.join(","))
        digest = content_hash([joined.item()])
        offset += rows
        records.append(
            {
                "chunk_no": chunk_no,
                "route": route,
                "kind": kind,
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


def build_requests(unique: pl.DataFrame | pl.LazyFrame, options: RunOptions) -> pl.DataFrame:
    """One JSON request object per place (`id` is its place_key), in first-seen order.

    Lazily, so that only the request's columns are filtered and sorted, and the JSON is built
    and suffixed in one pass (eagerly, a million places held three copies of every request).
    """
    fields = [pl.col("place_key").alias("id"), *(pl.col(f) for f in REQUEST_FIELDS)]
    request = pl.struct(fields).struct.json_encode()
    if options.mode == "enrich":
        extra = ',"attributes":' + json.dumps(list(options.effective_attributes))
        if options.include_summary:
            extra += ',"include_summary":true'
        request = request.str.strip_suffix("}") + pl.lit(extra + "}")
    frame = unique.lazy()
    core = ["core_key"] if "core_key" in frame.collect_schema().names() else []
    return frame.sort("row_ord").select("place_key", request.alias("request"), *core).collect()


def choose_route(places: int, options: RunOptions) -> Literal["sync", "job"]:
    """Synchronous calls only when they take strictly fewer requests than a job (3), else bulk
    jobs: a job is idempotent, a synchronous call whose answer is lost is not (issue 11)."""
    if options.route != "auto":
        return options.route
    per_request = MAX_ENRICH_BATCH if options.mode == "enrich" else 1
    sync_requests = -(-places // per_request)
    return "sync" if sync_requests < JOB_MIN_REQUESTS else "job"


def plan_chunks(requests: pl.DataFrame, options: RunOptions) -> pl.DataFrame:
    """Assign each place a chunk and a position in it; chunks keep the places' order."""
    route = choose_route(requests.height, options)
    if route == "job":
        size = options.chunk_rows
    else:
        size = MAX_ENRICH_BATCH if options.mode == "enrich" else 1
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    return requests.with_columns(
        (index // size).cast(pl.Int32).alias("chunk_no"),
        (index % size).cast(pl.Int32).alias("position"),
        pl.lit(route).alias("route"),
    )


def chunk_body(requests: Sequence[str]) -> bytes:
    """The exact body of a chunk: its places' stored requests, in position order."""
    return b'{"pois":[' + ",".join(requests).encode() + b"]}"


def content_hash(requests: Sequence[str]) -> str:
    return hashlib.sha256(chunk_body(requests)).hexdigest()


def idempotency_key(run_id: str, chunk_no: int, digest: str) -> str:
    """From the run and the chunk's content: a resumed run replays, a new run is new work."""
    return f"pf-{run_id}-c{chunk_no:05d}-{digest[:16]}"


@dataclass(frozen=True)
class Estimate:
    places: int
    credits: int
    requests: int
    route: str
    rate_key: str
    credits_per_place: int


def estimate(places: int, options: RunOptions, pricing: PricingCard | None) -> Estimate:
    """The most the run can cost: every place charged at the pricing card's rate for its route.

    Jobs hold one credit per row and charge only billable rows, so the true charge is at most
    this; the request count is the least the route needs (a job's polls depend on its eta).
    """
    route = choose_route(places, options)
    if route == "job":
        key = f"job_{options.mode}"
        jobs = -(-places // options.chunk_rows) if places else 0
        requests = jobs * JOB_MIN_REQUESTS
    else:
        key = options.mode
        per_request = MAX_ENRICH_BATCH if options.mode == "enrich" else 1
        requests = -(-places // per_request)
    rate = pricing.rate(key) if pricing else None
    per_place = rate.credits if rate and rate.credits is not None else 1
    return Estimate(places, places * per_place, requests, route, key, per_place)


def refusal(estimate: Estimate, options: RunOptions, *, available: int | None) -> str | None:
    """Why the run must not start (None when it may): the caller's cap or the key's balance."""
    needed = estimate.credits
    cap = options.max_credits
    if cap is not None and needed > cap:
        return (
            f"this run could cost up to {needed:,} credits ({estimate.places:,} places"
            f" to send) and --max-credits is {cap:,}: raise --max-credits, or narrow the"
            " input; nothing was spent"
        )
    if available is not None and needed > available:
        return (
            f"this run needs up to {needed:,} credits held at once and the key has"
            f" {available:,} available: add credits or send less; nothing was spent"
        )
    return None
