"""Plan a run: the exact request of each place, chunks and their routes, and what it will cost.

Requests are built once, columnar, and stored with the run, so that a resumed run sends
byte-identical bodies and its Idempotency-Keys replay instead of buying the work again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from placeflow.api.models import (
    ALLOWED_ENRICH_ATTRIBUTES,
    DEFAULT_ENRICH_ATTRIBUTES,
    MAX_ENRICH_BATCH,
    MAX_JOB_ROWS,
    JobKind,
    PricingCard,
)
from placeflow.pipeline.columns import PLACE_FIELDS

Route = Literal["auto", "sync", "job"]
REQUEST_FIELDS = PLACE_FIELDS
"""The place fields a request carries (besides its id, the place_key)."""
JOB_MIN_REQUESTS = 3
"""A bulk job costs at least a submit, a status poll and a download."""


@dataclass(frozen=True)
class RunOptions:
    """What a run does, as given on the command line or to the flow."""

    mode: JobKind = "enrich"
    attributes: tuple[str, ...] = ()
    include_summary: bool = False
    max_credits: int | None = None
    max_age_days: float = 30.0
    force: bool = False
    route: Route = "auto"
    chunk_rows: int = MAX_JOB_ROWS
    mapping: tuple[tuple[str, str], ...] = ()
    encoding: str = "utf8"

    def __post_init__(self) -> None:
        if self.mode not in ("validate", "enrich"):
            raise ValueError(f"mode must be validate or enrich, not {self.mode!r}")
        unknown = sorted(set(self.attributes) - set(ALLOWED_ENRICH_ATTRIBUTES))
        if unknown:
            allowed = ", ".join(ALLOWED_ENRICH_ATTRIBUTES)
            raise ValueError(f"unknown attribute(s) {', '.join(unknown)}; allowed: {allowed}")
        if self.mode == "validate" and (self.attributes or self.include_summary):
            raise ValueError("--attributes and --include-summary apply to --mode enrich only")
        if len(self.attributes) > 9:
            raise ValueError("at most 9 attributes")
        if not 1 <= self.chunk_rows <= MAX_JOB_ROWS:
            raise ValueError(f"chunk rows must be 1 to {MAX_JOB_ROWS:,}")
        if self.max_credits is not None and self.max_credits < 0:
            raise ValueError("--max-credits must be 0 or more")
        if self.max_age_days < 0:
            raise ValueError("--max-age must be 0 or more days")

    @property
    def effective_attributes(self) -> tuple[str, ...]:
        """The attributes asked for, in a canonical order ('' for validate)."""
        if self.mode == "validate":
            return ()
        chosen = self.attributes or DEFAULT_ENRICH_ATTRIBUTES
        return tuple(a for a in ALLOWED_ENRICH_ATTRIBUTES if a in chosen)

    @property
    def signature(self) -> str:
        """Outcomes are interchangeable only between runs with the same signature."""
        summary = "summary" if self.include_summary else "no-summary"
        return f"{self.mode}|{','.join(self.effective_attributes)}|{summary}"


def run_options(
    *,
    mode: str = "enrich",
    attributes: Sequence[str] | None = None,
    include_summary: bool = False,
    max_credits: int | None = None,
    max_age: float = 30.0,
    force: bool = False,
    mapping: dict[str, str] | None = None,
    encoding: str = "utf8",
    route: str = "auto",
    chunk_rows: int = MAX_JOB_ROWS,
) -> RunOptions:
    """RunOptions from the CLI's and the flow's plain parameters (checked here, once)."""
    if mode not in ("validate", "enrich"):
        raise ValueError(f"--mode must be validate or enrich, not {mode!r}")
    if route not in ("auto", "sync", "job"):
        raise ValueError(f"--route must be auto, sync or job, not {route!r}")
    return RunOptions(
        mode=mode,  # type: ignore[arg-type]  # checked above
        attributes=tuple(attributes or ()),
        include_summary=include_summary,
        max_credits=max_credits,
        max_age_days=max_age,
        force=force,
        route=route,  # type: ignore[arg-type]  # checked above
        mapping=tuple(sorted((mapping or {}).items())),
        encoding=encoding,
        chunk_rows=chunk_rows,
    )


def build_requests(unique: pl.DataFrame, options: RunOptions) -> pl.DataFrame:
    """One JSON request object per place (`id` is its place_key), in first-seen order."""
    fields = [pl.col("place_key").alias("id"), *(pl.col(f) for f in REQUEST_FIELDS)]
    request = pl.struct(fields).struct.json_encode()
    if options.mode == "enrich":
        extra = ',"attributes":' + json.dumps(list(options.effective_attributes))
        if options.include_summary:
            extra += ',"include_summary":true'
        request = request.str.strip_suffix("}") + pl.lit(extra + "}")
    return unique.sort("row_ord").select("place_key", request.alias("request"))


def choose_route(places: int, options: RunOptions) -> Literal["sync", "job"]:
    """Synchronous calls when they take no more requests than a job would, else bulk jobs."""
    if options.route != "auto":
        return options.route
    per_request = MAX_ENRICH_BATCH if options.mode == "enrich" else 1
    sync_requests = -(-places // per_request)
    return "sync" if sync_requests <= JOB_MIN_REQUESTS else "job"


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
