"""Load chunks' verified result files into the warehouse, a batch of them in one transaction.

DuckDB reads the gzipped JSON Lines files itself, with explicit column types (``sql/load/``),
straight into the outcome table in one statement: unknown fields are ignored, unfamiliar enum
strings kept, a missing attribute is null. Each line must carry, in order, the place planned at
that position of the chunk, and the file must hold as many lines as the chunk has places (a
cancelled job's file: as many as the job says it processed, a prefix of the chunk), or nothing
is written. That read is also where the file's gzip stream and line count are proved (the fetch
only proves the bytes are the ones the service published): a stream that breaks off or a line
that is not JSON of the expected shape is refused. Loading a chunk again replaces its outcomes
and its charge/release entries, so a load repeated after a crash leaves exactly the rows of one
load.

A run loads its files in batches (`load_all`, `placeflow.runner.carry`): one statement reads a
batch's files, one checks every chunk of it, a few set statements settle them, one commit; each
statement costs about as much to plan as to read a chunk of 10,000 lines, so one a chunk was
most of a load's cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

from placeflow.errors import IllegalMove, LoadError, OptionsError
from placeflow.events import CreditsCharged, Emit, RowsLoaded
from placeflow.fields import ALLOWED_ENRICH_ATTRIBUTES, DEFAULT_ENRICH_ATTRIBUTES
from placeflow.pipeline.fetch import Billing, Fetched
from placeflow.state.runstate import RunState, Settlement
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
    file = Fetched(chunk_no, path, ref, billing, held, partial, lines)
    return load_results(con, run_id=run_id, kind=kind, files=[file], now=now)[0]


def load_results(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    kind: Kind,
    files: Sequence[Fetched],
    now: datetime | None = None,
) -> list[LoadInfo]:
    """Replace the chunks' outcomes and settlement with their files', in one transaction: one
    statement reads every file into the outcome table, one checks every chunk's rows against
    its plan, a few settle them all (`RunState.settled_all`); each file as `load_result` says.
    Nothing is written when one is refused: a batch of several files then raises `LoadError`
    for the batch (load its files one at a time to learn which, and why); a single file's
    says why."""
    if kind not in TABLES:
        raise OptionsError(f"kind must be validate or enrich, not {kind!r}")
    if bad := [f.billing for f in files if f.billing not in ("job", "sync")]:
        raise OptionsError(f"billing must be job or sync, not {bad[0]!r}")
    loaded_at = now or datetime.now(UTC)
    table = TABLES[kind]
    chunks = [f.chunk_no for f in files]
    several = f" (one of a batch of {len(files)} files)" if len(files) > 1 else ""

    def fail(message: str, file: Fetched = files[0]) -> LoadError:
        return LoadError(message + several, run_id=run_id, chunk_no=file.chunk_no, path=file.path)

    planned, attributes, bills_null_status = _context(con, run_id, chunks)
    for file in files:
        if not planned.get(file.chunk_no):
            raise fail("the chunk has no planned places in run_places", file)
    params: dict[str, Any] = {"run_id": run_id, "loaded_at": loaded_at}
    if kind == "enrich":
        params["attributes_requested"] = attributes or DEFAULT_ATTRIBUTES
        params["bill_null_status"] = bills_null_status
    for i, file in enumerate(files):
        params |= {f"path_{i}": str(file.path), f"chunk_{i}": file.chunk_no}
    lines_sql = _lines(kind, len(files))
    try:
        with transaction(con):
            earlier = f"delete from {table} where run_id = ? and list_contains(?, chunk_no)"  # noqa: S608 - one of our tables (TABLES)
            con.execute(earlier, [run_id, chunks])
            try:
                con.execute(f"insert into {table} by name {lines_sql}", params)
            except duckdb.Error as exc:
                raise _Refused(exc) from exc
            checks = _verify(con, table, {"run_id": run_id, "chunks": chunks})
            infos, settled = [], []
            for file in files:
                check = checks.get(file.chunk_no, _NONE)
                expected = planned[file.chunk_no]
                why = check.problem(expected, partial=file.partial, lines=file.lines)
                if why:
                    raise fail(why, file)
                infos.append(_settlement(check, expected, file))
                settled.append(infos[-1][1])
            try:
                RunState(con, run_id).settled_all(settled, loaded_at)
            except IllegalMove as exc:
                if not several:
                    raise
                raise fail(f"a chunk cannot be loaded: {exc}") from exc
    except _Refused as refused:
        # Read the file again, into nothing, to say why; unless the load joined a caller's
        # transaction, which the refusal spoilt: nothing more can be asked of it.
        why = None
        if not several and _free(con):
            try:
                reading = params | {"chunks": chunks}
                check = _verify(con, f"({lines_sql})", reading).get(chunks[0], _NONE)
            except duckdb.Error as exc:
                why = f"the result file cannot be read: {exc}"
            else:
                why = check.problem(
                    planned[chunks[0]], partial=files[0].partial, lines=files[0].lines
                )
        raise fail(why or f"the result file was refused: {refused.cause}") from refused.cause
    return [info for info, _ in infos]


def _settlement(check: _Check, expected: int, file: Fetched) -> tuple[LoadInfo, Settlement]:
    """What a chunk's checked rows charge and release, by its billing (see `load_result`)."""
    rows, succeeded, billable = check.rows, check.succeeded, check.billable
    short = None if rows == expected else f"partial result: {rows:,} of {expected:,} rows"
    charged = billable if file.billing == "job" else succeeded
    released = max(file.held - charged, 0) if file.billing == "job" else 0
    settled = f"{rows:,} rows loaded, {billable:,} billable"
    rule = "billable rows" if file.billing == "job" else "answered rows of a synchronous batch"
    notes = (f"{rule}; {settled}", f"hold of {file.held:,} less the charge")
    info = LoadInfo(rows, succeeded, rows - succeeded, billable, charged, released)
    return info, Settlement(
        file.chunk_no, file.ref, rows, charged, released, notes, str(file.path), short
    )


def _lines(kind: Kind, files: int) -> str:
    """sql/load/lines_{kind}.sql over `files` files (sql/load/file_{kind}.sql each, its
    parameters numbered: $path_0, $chunk_0, ...)."""
    one = "\n".join(
        line for line in sql_text(f"load/file_{kind}").splitlines() if not line.startswith("--")
    ).strip()
    each = [
        one.replace("$path", f"$path_{i}").replace("$chunk_no", f"$chunk_{i}") for i in range(files)
    ]
    return sql_text(f"load/lines_{kind}").replace("{files}", "\n    union all\n".join(each))


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


_NONE = _Check(0, 0, 0, 0, None)
"""A chunk with no row."""


def _verify(con: duckdb.DuckDBPyConnection, rows: str, params: dict[str, Any]) -> dict[int, _Check]:
    """sql/load/verify.sql over `rows` (the outcome table, or a reading of the files), by
    chunk."""
    found = con.execute(sql_text("load/verify").format(rows=rows), params).fetchall()
    return {
        int(row[0]): _Check(int(row[1]), int(row[2]), int(row[3]), int(row[4]), row[5])
        for row in found
    }


def _free(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether no transaction is open on `con` (a spoilt one counts as open)."""
    try:
        return not in_transaction(con)
    except duckdb.Error:
        return False


def _context(
    con: duckdb.DuckDBPyConnection, run_id: str, chunks: list[int]
) -> tuple[dict[int, int], str | None, bool]:
    """How many places each chunk has, the attributes the run's requests name (comma-separated),
    and whether the run's service bills a status object of only nulls (the spec's rule read
    literally: yes), unless a balanced run taught otherwise (`placeflow.pipeline.reconcile`)."""
    found = con.execute(
        sql_text("load/chunk_context"), {"run_id": run_id, "chunks": chunks}
    ).fetchall()
    planned = {int(row[0]): int(row[1]) for row in found}
    attributes = found[0][2] if found else None
    bills = found[0][3] if found else None
    return planned, attributes or None, True if bills is None else bool(bills)


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


def load_all(
    state: RunState, fetched: Sequence[Fetched], *, kind: Kind, emit: Emit
) -> list[LoadInfo]:
    """Load stage for a batch of chunks' verified files, in one transaction (`load_results`):
    all settled, or none and `LoadError` (the caller then loads them one at a time)."""
    infos = load_results(state.con, run_id=state.run_id, kind=kind, files=fetched, now=state.now())
    return [told(f.chunk_no, info, emit) for f, info in zip(fetched, infos, strict=True)]
