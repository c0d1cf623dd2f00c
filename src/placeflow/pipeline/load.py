"""Load one chunk's verified result file into the warehouse, in one transaction.

DuckDB reads the gzipped JSON Lines file itself, with explicit column types (``sql/load/``),
straight into the outcome table in one statement: unknown fields are ignored, unfamiliar enum
strings kept, a missing attribute is null. Each line must carry, in order, the place planned at
that position of the chunk, and the file must hold as many lines as the chunk has places (a
cancelled job's file: as many as the job says it processed, a prefix of the chunk), or nothing
is written. That read is also where the file's gzip stream and line count are proved (the fetch
only proves the bytes are the ones the service published): a stream that breaks off or a line
that is not JSON of the expected shape is refused. Loading a chunk again replaces its outcomes
and its charge/release entries, so a load repeated after a crash leaves exactly the rows of one
load.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

from placeflow.errors import LoadError, OptionsError
from placeflow.events import CreditsCharged, Emit, RowsLoaded
from placeflow.fields import ALLOWED_ENRICH_ATTRIBUTES, DEFAULT_ENRICH_ATTRIBUTES
from placeflow.pipeline.fetch import Billing, Fetched
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import in_transaction, sql_text, transaction

Kind = Literal["validate", "enrich"]

TABLES: dict[str, str] = {"validate": "validations", "enrich": "enrichments"}
DEFAULT_ATTRIBUTES = ",".join(
    a for a in ALLOWED_ENRICH_ATTRIBUTES if a in DEFAULT_ENRICH_ATTRIBUTES
)
"""What the service answers when a request names no attributes, in canonical order."""


@dataclass(frozen=True)
class LoadInfo:
    """What one load wrote: outcome rows, how they split, and the credits it settled."""

    rows: int
    succeeded: int
    failed: int
    billable: int
    charged: int
    released: int


class _Refused(Exception):
    """The insert stopped (unreadable file or a line not the planned place): rolled back."""

    def __init__(self, cause: duckdb.Error) -> None:
        super().__init__(str(cause))
        self.cause = cause


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
    lines: int | None = None,
    now: datetime | None = None,
) -> LoadInfo:
    """Replace the chunk's outcomes and settlement with the file's, in one transaction.

    billing "job": charge the billable rows, release the rest of `held`; "sync": charge every
    answered (succeeded) row, release nothing. `partial` accepts a file holding only the first
    rows of the chunk (a cancelled job's processed rows); the rest stay without an outcome.
    `lines`, when given, is how many lines the service says the file holds: the file must
    hold exactly that many.
    """
    if kind not in TABLES:
        raise OptionsError(f"kind must be validate or enrich, not {kind!r}")
    if billing not in ("job", "sync"):
        raise OptionsError(f"billing must be job or sync, not {billing!r}")
    loaded_at = now or datetime.now(UTC)
    table = TABLES[kind]

    def fail(message: str) -> LoadError:
        return LoadError(message, run_id=run_id, chunk_no=chunk_no, path=path)

    expected, attributes, bills_null_status = _context(con, run_id, chunk_no)
    if expected == 0:
        raise fail("the chunk has no planned places in run_places")
    params: dict[str, Any] = {
        "path": str(path),
        "run_id": run_id,
        "chunk_no": chunk_no,
        "loaded_at": loaded_at,
    }
    if kind == "enrich":
        params["attributes_requested"] = attributes or DEFAULT_ATTRIBUTES
        params["bill_null_status"] = bills_null_status
    lines_sql = sql_text(f"load/lines_{kind}")
    try:
        with transaction(con):
            scope = [run_id, chunk_no]
            con.execute(f"delete from {table} where run_id = ? and chunk_no = ?", scope)  # noqa: S608 - one of our tables (TABLES)
            try:
                con.execute(f"insert into {table} by name {lines_sql}", params)
            except duckdb.Error as exc:
                raise _Refused(exc) from exc
            check = _verify(con, table, {"run_id": run_id, "chunk_no": chunk_no})
            why = check.problem(expected, partial=partial, lines=lines)
            if why:
                raise fail(why)
            rows, succeeded, billable = check.rows, check.succeeded, check.billable
            short = None if rows == expected else f"partial result: {rows:,} of {expected:,} rows"
            charged = billable if billing == "job" else succeeded
            released = max(held - charged, 0) if billing == "job" else 0
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
    except _Refused as refused:
        # Read the file again, into nothing, to say why; unless the load joined a caller's
        # transaction, which the refusal spoilt: nothing more can be asked of it.
        why = None
        if _free(con):
            try:
                check = _verify(con, f"({lines_sql})", params)
            except duckdb.Error as exc:
                why = f"the result file cannot be read: {exc}"
            else:
                why = check.problem(expected, partial=partial, lines=lines)
        raise fail(why or f"the result file was refused: {refused.cause}") from refused.cause
    return LoadInfo(rows, succeeded, rows - succeeded, billable, charged, released)


@dataclass(frozen=True)
class _Check:
    """A chunk's outcome rows beside its plan (sql/load/verify.sql)."""

    rows: int
    succeeded: int
    billable: int
    wrong: int
    first_wrong: dict[str, Any] | None

    def problem(self, expected: int, *, partial: bool, lines: int | None) -> str | None:
        """Why these rows cannot be the chunk's `expected` places, if they cannot."""
        rows = self.rows
        if rows > expected or (rows < expected and not partial):
            return f"the file has {rows:,} lines and the chunk {expected:,} places"
        if lines is not None and rows != lines:
            return f"the file has {rows:,} lines and the job says {lines:,}"
        if self.wrong and self.first_wrong is not None:
            first = self.first_wrong
            return (
                f"{self.wrong:,} line(s) carry another place than planned; line"
                f" {first['line'] + 1} has id {first['got']!r}, expected {first['expected']!r}"
            )
        return None


def _verify(con: duckdb.DuckDBPyConnection, rows: str, params: dict[str, Any]) -> _Check:
    """sql/load/verify.sql over `rows` (the outcome table, or a reading of the file)."""
    row = con.execute(sql_text("load/verify").format(rows=rows), params).fetchone()
    assert row is not None
    return _Check(int(row[0]), int(row[1]), int(row[2]), int(row[3]), row[4])


def _free(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether no transaction is open on `con` (a spoilt one counts as open)."""
    try:
        return not in_transaction(con)
    except duckdb.Error:
        return False


def _context(
    con: duckdb.DuckDBPyConnection, run_id: str, chunk_no: int
) -> tuple[int, str | None, bool]:
    """How many places the chunk has, the attributes its requests name (comma-separated), and
    whether the run's service bills a status object of only nulls (the spec's rule read
    literally: yes), unless a balanced run taught otherwise (`placeflow.pipeline.reconcile`)."""
    row = con.execute(
        sql_text("load/chunk_context"), {"run_id": run_id, "chunk_no": chunk_no}
    ).fetchone()
    assert row is not None
    return int(row[0]), row[1] or None, True if row[2] is None else bool(row[2])


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
        lines=fetched.lines,
        now=state.now(),
    )
    return told(fetched.chunk_no, info, emit)


def told(chunk_no: int, info: LoadInfo, emit: Emit) -> LoadInfo:
    """A chunk's load said as facts, whatever its request kind loaded (a result file, a
    research answer): its outcomes are in (`RowsLoaded`), its credits settled
    (`CreditsCharged`)."""
    emit(RowsLoaded(chunk_no, info.rows, info.succeeded, info.failed))
    emit(CreditsCharged(chunk_no, info.charged, info.released))
    return info
