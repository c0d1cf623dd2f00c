"""Plan a run: the exact request of each place, chunks and their routes, and what it will cost.

Requests are built once, columnar, and stored with the run, so that a resumed run sends
byte-identical bodies and its Idempotency-Keys replay instead of buying the work again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import polars as pl

from placeflow.api.models import PricingCard
from placeflow.fields import MAX_ENRICH_BATCH, PLACE_FIELDS
from placeflow.options import RunOptions
from placeflow.pipeline.staging import Staging
from placeflow.state.records import MARKED, REQUESTS, Plan, content_hash
from placeflow.store.warehouse import sql_text

REQUEST_FIELDS = PLACE_FIELDS
"""The place fields a request carries (besides its id, the place_key)."""
JOB_MIN_REQUESTS = 3
"""A bulk job costs at least a submit, a status poll and a download."""
PLAN_MEMORY = "256MB"
"""DuckDB's memory while planning. The plan only scans the marked places a batch at a time and
appends their requests (~300 bytes a place), which outgrow any pool: at the staging's 512MB,
the pool filled with requests beside polars' batch and was a large run's peak (2.5M rows:
1,140-1,180 MB against 930-970 with this cap, the plan's CPU alike; the requests spill to
disk sooner and are read once, by the open stage)."""


@dataclass(frozen=True)
class PlanInfo:
    """What the plan sends: places, in how many chunks, by which route."""

    places: int
    chunks: int
    route: str


def plan(staging: Staging, options: RunOptions) -> tuple[Plan, PlanInfo]:
    """Plan stage: the request of each place still to send (MARKED's submitted rows, in input
    order), chunked: built a batch of whole chunks at a time (memory holds one batch) and
    appended to REQUESTS in chunk order, each chunk's sha256 taken as its batch is built; with
    DuckDB's memory at PLAN_MEMORY."""
    with staging.limited(PLAN_MEMORY):
        return _planned(staging, options)


def _planned(staging: Staging, options: RunOptions) -> tuple[Plan, PlanInfo]:
    places = staging.count(MARKED, "disposition = 'submitted'")
    route = choose_route(places, options)
    per_batch = (size := chunk_size(route, options)) * max(1, options.batch_rows // size)
    starts = staging.query(sql_text("prepare/plan_batches"), {"per_batch": per_batch})
    bounds = [*starts.get_column("row_ord").to_list(), None]
    staging.append(REQUESTS, pl.DataFrame(schema=REQUESTS_SCHEMA))  # there even if empty
    chunks = [pl.DataFrame(schema=CHUNKS_SCHEMA)]
    for k in range(len(bounds) - 1):  # one iteration per batch of chunks, not per row
        batch = staging.query(
            sql_text("prepare/plan_batch"), {"low": bounds[k], "high": bounds[k + 1]}
        )
        requests = plan_chunks(
            build_requests(batch, options), options, route=route, start=k * per_batch
        )
        staging.append(REQUESTS, requests.select(*REQUESTS_SCHEMA))
        chunks.append(chunk_digests(requests))
    table = pl.concat(chunks)
    return Plan(table), PlanInfo(places, table.height, route)


REQUESTS_SCHEMA = {
    "place_key": pl.String, "request": pl.String, "core_key": pl.String,
    "chunk_no": pl.Int32, "position": pl.Int32,
}  # fmt: skip
CHUNKS_SCHEMA = {
    "chunk_no": pl.Int32, "route": pl.String, "rows": pl.Int32, "content_sha256": pl.String,
}  # fmt: skip


def chunk_digests(requests: pl.DataFrame) -> pl.DataFrame:
    """One row per chunk of a planned batch (whole chunks, in chunk and position order): its
    route, rows and the sha256 of the exact body it will be sent as (`content_hash`)."""
    sizes = requests.group_by("chunk_no", maintain_order=True).agg(
        pl.col("route").first(), pl.len().cast(pl.Int32).alias("rows")
    )
    digests, offset = [], 0
    for rows in sizes.get_column("rows"):  # one iteration per chunk, not per row
        joined = requests.slice(offset, rows).select(pl.col("request").str.join(",")).item()
        digests.append(content_hash([joined]))
        offset += rows
    return sizes.with_columns(pl.Series("content_sha256", digests, pl.String))


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


def chunk_size(route: str, options: RunOptions) -> int:
    """Places per chunk: a job's chunk_rows, a synchronous call's batch (1 to validate)."""
    if route == "job":
        return options.chunk_rows
    return MAX_ENRICH_BATCH if options.mode == "enrich" else 1


def plan_chunks(
    requests: pl.DataFrame,
    options: RunOptions,
    *,
    route: Literal["sync", "job"] | None = None,
    start: int = 0,
) -> pl.DataFrame:
    """Assign each place a chunk and a position in it; chunks keep the places' order. A batch
    of a larger plan passes the plan's route and the index of its first place (`start`, a
    multiple of the chunk size)."""
    route = route or choose_route(requests.height, options)
    size = chunk_size(route, options)
    index = pl.int_range(pl.len(), dtype=pl.Int64) + start
    return requests.with_columns(
        (index // size).cast(pl.Int32).alias("chunk_no"),
        (index % size).cast(pl.Int32).alias("position"),
        pl.lit(route).alias("route"),
    )


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
