"""The records a run's state is made of, as the stages hand them over and read them back: the
staging tables a plan is held in, the plan itself, a chunk's row in `jobs`, and the exact body
and Idempotency-Key of a chunk (derived from the run and the chunk's content, so a resumed run
replays and a new run is new work).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from placeflow.fields import JobKind
from placeflow.store.warehouse import sql_text

# --- the staging tables (`placeflow.pipeline.staging` keeps them) ----------------------------

PLACES = "pf_staged_places"
"""normalize's places and their own exact keys: row_ord, source_file, source_row, source_id,
the PLACE_FIELDS, note, place_key, core_key."""
REJECTS = "pf_staged_rejects"
"""normalize's rejects: row_ord, source_file, source_row, source_id, field, reason, raw."""
DEDUPED = "pf_staged_deduped"
"""PLACES with own_key (the row's own place_key) and place_key the answering place's key,
matched_row, match_rule, match_probability, disposition (submitted / duplicate) and
first_row_ord; note names the row a duplicate repeats."""
MATCHED = "pf_staged_matches"
"""What the fuzzy pass merged, for the run's run_matches: place_key (the merged place's own
key), cluster_key, matched_key, match_rule, match_probability, evidence, matched_run_id."""
MARKED = "pf_staged_marked"
"""DEDUPED with disposition skipped_fresh / held_failing where so, and outcome_key."""
REQUESTS = "pf_staged_requests"
"""Each place to send: place_key, request (its JSON), core_key, chunk_no, position."""
TABLES = (PLACES, REJECTS, DEDUPED, MATCHED, MARKED, REQUESTS)
STAGED = "select count(*) > 0 from duckdb_tables() where temporary and table_name = ?"
"""Whether a staging table (the parameter) exists on the connection."""


def plan_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """The rows a plan staged on `con` records, without their run_id: (table, select) for its
    input rows kept and rejected (run_rows), its fuzzy merges (run_matches, when the dedupe
    staged any), its rejects and its places with their requests (run_places). The run's open
    inserts them in its one transaction (`RunState.open`), or a larger run writes them in parts
    before it is recorded (`placeflow.state.opening`)."""
    rows = [
        ("run_rows", sql_text("open/run_rows_kept")),
        ("run_rows", sql_text("open/run_rows_rejected")),
    ]
    if con.execute(STAGED, [MATCHED]).fetchall()[0][0]:  # staged by the fuzzy dedupe
        rows.append(("run_matches", sql_text("open/run_matches")))
    rows += [
        ("rejects", f"select * from {REJECTS}"),  # noqa: S608 - our staging table
        ("run_places", f"select * from {REQUESTS}"),  # noqa: S608 - our staging table
    ]
    return rows


# --- the plan and its chunks ----------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """A run's plan, held in the staging tables of the connection that made it: every kept
    row's disposition in MARKED, the rejects in REJECTS, each place's request in REQUESTS
    (chunk_no, position); `chunks` has one row per chunk (chunk_no, route, rows,
    content_sha256), in chunk order. `RunState.open` writes them to the run's tables."""

    chunks: pl.DataFrame


@dataclass(frozen=True)
class Chunk:
    """A chunk's row in `jobs`, as the stages need it."""

    chunk_no: int
    route: str
    status: str
    rows: int
    idempotency_key: str | None
    batch_id: str | None
    result_path: str | None
    result_sha256: str | None
    sending_at: datetime | None = None
    error_code: str | None = None


CHUNK_COLUMNS = (
    "chunk_no, route, status, rows, idempotency_key, batch_id, result_path, result_sha256,"
    " sending_at, error_code"
)
"""`jobs` columns as `Chunk` holds them, in its field order."""


def jobs_table(chunks: pl.DataFrame, *, run_id: str, kind: JobKind, now: datetime) -> pl.DataFrame:
    """One `jobs` row per chunk: content hash and Idempotency-Key (job chunks), status planned."""
    keys = [
        idempotency_key(run_id, chunk_no, digest) if route == "job" else None
        for chunk_no, route, digest in chunks.select(
            "chunk_no", "route", "content_sha256"
        ).iter_rows()
    ]  # one per chunk, not per row
    return chunks.select(
        "chunk_no",
        "route",
        pl.lit(kind).alias("kind"),
        "rows",
        "content_sha256",
        pl.Series("idempotency_key", keys, pl.String),
        pl.lit("planned").alias("status"),
        pl.lit(now).alias("created_at"),
    )


def chunk_body(requests: Sequence[str]) -> bytes:
    """The exact body of a chunk: its places' stored requests, in position order."""
    return b'{"pois":[' + ",".join(requests).encode() + b"]}"


def content_hash(requests: Sequence[str]) -> str:
    return hashlib.sha256(chunk_body(requests)).hexdigest()


def idempotency_key(run_id: str, chunk_no: int, digest: str) -> str:
    """From the run and the chunk's content: a resumed run replays, a new run is new work."""
    return f"pf-{run_id}-c{chunk_no:05d}-{digest[:16]}"
