"""A run's chunks as the warehouse holds them: the write-ahead state every step reads and moves.

`jobs` has one row per chunk (its route, state, Idempotency-Key, batch_id and result file),
`run_places` the exact requests of its places, and `credit_ledger` what it held, charged and
released. These helpers read and write those rows for one run; the steps that move a chunk
from state to state are in `execute`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from placeflow.api.client import PlaceApiClient
from placeflow.api.models import JobKind
from placeflow.api.poller import JobPoller
from placeflow.pipeline.plan import chunk_body as plan_body

log = logging.getLogger("placeflow.execute")


@dataclass
class RunContext:
    """What every step of one run needs: its database, its client and where files go."""

    con: duckdb.DuckDBPyConnection
    api: PlaceApiClient
    run_id: str
    kind: JobKind
    workdir: Path
    poller: JobPoller
    note: Callable[[str], None] = field(default=lambda message: log.info("%s", message))
    due: dict[str, float] = field(default_factory=dict)
    """When (on the client's clock) each job submitted by this process should be done: its
    first poll waits until then. A resumed process knows none, and polls each job once now."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(frozen=True)
class Chunk:
    chunk_no: int
    route: str
    status: str
    rows: int
    idempotency_key: str | None
    batch_id: str | None
    result_path: str | None
    result_sha256: str | None


def chunks(ctx: RunContext, *statuses: str) -> list[Chunk]:
    """The run's chunks in the given states (all when none given), in chunk order."""
    rows = ctx.con.execute(
        "select chunk_no, route, status, rows, idempotency_key, batch_id, result_path,"
        " result_sha256 from jobs where run_id = ? and (len(?) = 0 or list_contains(?, status))"
        " order by chunk_no",
        [ctx.run_id, list(statuses), list(statuses)],
    ).fetchall()
    return [Chunk(*row) for row in rows]


def chunk_requests(ctx: RunContext, chunk_no: int) -> list[dict[str, Any]]:
    """The stored requests of a chunk, in position order (the body is rebuilt byte for byte)."""
    rows = ctx.con.execute(
        "select request from run_places where run_id = ? and chunk_no = ? order by position",
        [ctx.run_id, chunk_no],
    ).fetchall()
    return [json.loads(r[0]) for r in rows]


def chunk_body(ctx: RunContext, chunk_no: int) -> bytes:
    """The exact body of a job chunk, joined by DuckDB from its stored requests in position
    order: the bytes whose sha256 is the chunk's `content_sha256`."""
    row = ctx.con.execute(
        "select string_agg(request, ',' order by position) from run_places"
        " where run_id = ? and chunk_no = ?",
        [ctx.run_id, chunk_no],
    ).fetchone()
    return plan_body([row[0]] if row and row[0] is not None else [])


def set_chunk(ctx: RunContext, chunk_no: int, **values: Any) -> None:
    names = ", ".join(f"{name} = ?" for name in values)
    ctx.con.execute(
        f"update jobs set {names} where run_id = ? and chunk_no = ?",  # noqa: S608 - names are ours
        [*values.values(), ctx.run_id, chunk_no],
    )


def record_credits(
    ctx: RunContext, chunk_no: int, ref: str, kind: str, credits: int, note: str
) -> None:
    ctx.con.execute(
        "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)"
        " values (?, ?, ?, ?, ?, ?, ?)",
        [ctx.run_id, chunk_no, ref, kind, credits, ctx.now(), note],
    )


def chunk_of(ctx: RunContext, batch_id: str) -> int:
    row = ctx.con.execute(
        "select chunk_no from jobs where run_id = ? and batch_id = ?", [ctx.run_id, batch_id]
    ).fetchone()
    if row is None:
        raise LookupError(f"job {batch_id} is not part of run {ctx.run_id}")
    return int(row[0])


def held_credits(ctx: RunContext, chunk_no: int) -> int:
    row = ctx.con.execute(
        "select coalesce(sum(credits), 0) from credit_ledger"
        " where run_id = ? and chunk_no = ? and kind = 'hold'",
        [ctx.run_id, chunk_no],
    ).fetchone()
    return int(row[0]) if row else 0
