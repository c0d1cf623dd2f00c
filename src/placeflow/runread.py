"""The read side of a run's record: a chunk's row in `jobs` (`Chunk`) and a stored run
(`StoredRun`), found by id or by the fingerprint of its command (`placeflow.runstate` writes
them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import duckdb

from placeflow.errors import UnknownRun
from placeflow.options import RunOptions


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


@dataclass(frozen=True)
class StoredRun:
    """A run as recorded: enough to resume it."""

    run_id: str
    status: str
    options: RunOptions
    inputs: tuple[str, ...]


def unfinished_run(con: duckdb.DuckDBPyConnection, fingerprint: str) -> str | None:
    """The newest run of the same command that did not finish, to resume instead of redo."""
    row = con.execute(
        "select run_id from runs where fingerprint = ? and status in ('running', 'interrupted')"
        " order by created_at desc limit 1",
        [fingerprint],
    ).fetchone()
    return str(row[0]) if row else None


def stored_run(con: duckdb.DuckDBPyConnection, run_id: str) -> StoredRun:
    row = con.execute(
        "select status, options, inputs from runs where run_id = ?", [run_id]
    ).fetchone()
    if row is None:
        raise UnknownRun(f"no run {run_id} in this database: `placeflow runs` lists them")
    return StoredRun(run_id, str(row[0]), RunOptions.parse(str(row[1])), tuple(json.loads(row[2])))
