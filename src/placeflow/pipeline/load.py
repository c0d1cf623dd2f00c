"""Load one chunk's verified result file into the warehouse, in one transaction.

DuckDB reads the gzipped JSON Lines file itself, with explicit column types (``sql/load/``):
unknown fields are ignored, unfamiliar enum strings kept, a missing attribute is null. Each
line must carry, in order, the place planned at that position of the chunk, or nothing is
written. Loading a chunk again replaces its outcomes and its charge/release entries, so a load
repeated after a crash leaves exactly the rows of one load.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

from placeflow.api.models import ALLOWED_ENRICH_ATTRIBUTES, DEFAULT_ENRICH_ATTRIBUTES
from placeflow.errors import WarehouseError
from placeflow.events import CreditsCharged, Emit, RowsLoaded
from placeflow.pipeline.fetch import Billing, Fetched
from placeflow.runstate import RunState
from placeflow.warehouse import sql_text, transaction

Kind = Literal["validate", "enrich"]

STAGE = "load_stage"
TABLES: dict[str, str] = {"validate": "validations", "enrich": "enrichments"}
DEFAULT_ATTRIBUTES = ",".join(
    a for a in ALLOWED_ENRICH_ATTRIBUTES if a in DEFAULT_ENRICH_ATTRIBUTES
)
"""What the service answers when a request names no attributes, in canonical order."""


class LoadError(WarehouseError):
    """The file does not match its chunk (line count, ids out of order) or cannot be read:
    nothing was written."""

    def __init__(self, message: str, *, run_id: str, chunk_no: int, path: Path) -> None:
        super().__init__(f"run {run_id} chunk {chunk_no}: {message} ({path}); nothing was loaded")
        self.run_id = run_id
        self.chunk_no = chunk_no
        self.path = path


@dataclass(frozen=True)
class LoadInfo:
    """What one load wrote: outcome rows, how they split, and the credits it settled."""

    rows: int
    succeeded: int
    failed: int
    billable: int
    charged: int
    released: int


def load_result(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    chunk_no: int,
    kind: Kind,
    path: Path,
    billing: Billing,
    held: int,
    ref: str,
    partial: bool = False,
    now: datetime | None = None,
) -> LoadInfo:
    """Replace the chunk's outcomes and settlement with the file's, in one transaction.

    billing "job": charge the billable rows, release the rest of `held`; "sync": charge every
    answered (succeeded) row, release nothing. `partial` accepts a file holding only the first
    rows of the chunk (a cancelled job's processed rows); the rest stay without an outcome.
    """
    if kind not in TABLES:
        raise ValueError(f"kind must be validate or enrich, not {kind!r}")
    if billing not in ("job", "sync"):
        raise ValueError(f"billing must be job or sync, not {billing!r}")
    loaded_at = now or datetime.now(UTC)
    table = TABLES[kind]
    with transaction(con):
        expected = _stage(con, run_id=run_id, chunk_no=chunk_no, kind=kind, path=path)
        stats = _verify(
            con, run_id=run_id, chunk_no=chunk_no, path=path, expected=expected, partial=partial
        )
        rows, succeeded, billable = stats
        short = None if rows == expected else f"partial result: {rows:,} of {expected:,} rows"
        charged = billable if billing == "job" else succeeded
        released = max(held - charged, 0) if billing == "job" else 0
        scope = [run_id, chunk_no]
        con.execute(f"delete from {table} where run_id = ? and chunk_no = ?", scope)  # noqa: S608
        con.execute(
            f"insert into {table} by name"  # noqa: S608 - table names are ours
            f" select ? as run_id, ? as chunk_no, * exclude (expected_key), ? as loaded_at"
            f" from {STAGE}",
            [run_id, chunk_no, loaded_at],
        )
        settled = f"{rows:,} rows loaded, {billable:,} billable"
        rule = "billable rows" if billing == "job" else "answered rows of a synchronous batch"
        RunState(con, run_id).settled(
            chunk_no,
            ref=ref,
            rows=rows,
            charged=charged,
            released=released,
            notes=(f"{rule}; {settled}", f"hold of {held:,} less the charge"),
            path=str(path),
            short=short,
            at=loaded_at,
        )
        con.execute(f"drop table {STAGE}")
    return LoadInfo(rows, succeeded, rows - succeeded, billable, charged, released)


def _stage(
    con: duckdb.DuckDBPyConnection, *, run_id: str, chunk_no: int, kind: Kind, path: Path
) -> int:
    """Read the file into a temporary stage table; return how many places the chunk has."""
    params: dict[str, Any] = {"path": str(path), "run_id": run_id, "chunk_no": chunk_no}
    if kind == "enrich":
        params["default_attributes"] = DEFAULT_ATTRIBUTES
        params["bill_null_status"] = _bills_null_status(con, run_id)
    try:
        con.execute(
            f"create or replace temp table {STAGE} as\n" + sql_text(f"load/stage_{kind}"),
            params,
        )
    except duckdb.Error as exc:
        raise LoadError(
            f"the result file cannot be read: {exc}", run_id=run_id, chunk_no=chunk_no, path=path
        ) from exc
    return RunState(con, run_id).planned_places(chunk_no)


def _bills_null_status(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run's service bills a status object of only nulls (the spec's rule read
    literally: yes), unless a balanced run taught otherwise (`placeflow.pipeline.reconcile`)."""
    row = con.execute(
        "select bool_and(b.billed) from billing_readings b join runs r on b.target = r.target"
        " where r.run_id = ? and b.shape = 'null_status'",
        [run_id],
    ).fetchone()
    return True if row is None or row[0] is None else bool(row[0])


def _verify(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    chunk_no: int,
    path: Path,
    expected: int,
    partial: bool,
) -> tuple[int, int, int]:
    """(rows, succeeded, billable) of the stage, after checking it against the chunk."""
    row = con.execute(
        f"select count(*), count(*) filter (where success), count(*) filter (where billable),"  # noqa: S608
        f" count(*) filter (where place_key is distinct from expected_key),"
        f" min(position) filter (where place_key is distinct from expected_key)"
        f" from {STAGE}"
    ).fetchone()
    assert row is not None
    rows, succeeded, billable, wrong, first_wrong = row

    def fail(message: str) -> LoadError:
        return LoadError(message, run_id=run_id, chunk_no=chunk_no, path=path)

    if expected == 0:
        raise fail("the chunk has no planned places in run_places")
    if rows > expected or (rows < expected and not partial):
        raise fail(f"the file has {rows:,} lines and the chunk {expected:,} places")
    if wrong:
        got = con.execute(
            f"select place_key, expected_key from {STAGE} where position = ?",  # noqa: S608
            [first_wrong],
        ).fetchone()
        assert got is not None
        raise fail(
            f"{wrong:,} line(s) carry another place than planned; line {first_wrong + 1} has id"
            f" {got[0]!r}, expected {got[1]!r}"
        )
    return int(rows), int(succeeded), int(billable)


def load(state: RunState, fetched: Fetched, *, kind: Kind, emit: Emit) -> LoadInfo:
    """Load stage: a chunk's verified result file into the warehouse, settled in the ledger."""
    info = load_result(
        state.con,
        run_id=state.run_id,
        chunk_no=fetched.chunk_no,
        kind=kind,
        path=fetched.path,
        billing=fetched.billing,
        held=fetched.held,
        ref=fetched.ref,
        partial=fetched.partial,
        now=state.now(),
    )
    emit(RowsLoaded(fetched.chunk_no, info.rows, info.succeeded, info.failed))
    emit(CreditsCharged(fetched.chunk_no, info.charged, info.released))
    return info
