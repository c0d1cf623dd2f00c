"""What the CLI checks before it starts Prefect (whose temporary server takes seconds to start).

Arguments, input files and the run asked to resume are looked at here, in this process, so an
error the user can fix is said at once, with its exit code, and without a flow run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from placeflow.errors import InputError, UnknownRun, UsageError
from placeflow.options import RunOptions
from placeflow.pipeline.objectsource import has_objects
from placeflow.pipeline.read import stream_inputs
from placeflow.support.objects import Storage, is_object_url, list_objects


def check_inputs(
    inputs: list[str], options: RunOptions, storage: Storage | None = None
) -> list[str]:
    """Read the inputs as the run will (a batch at a time, each let go once read); raise
    `InputError` when no file has a data row.

    Returns notices for the user: the files (of several) that carry no data row. Inputs in
    object storage are only listed here (`storage` reaches them): the run reads them.
    """
    if has_objects(inputs):
        for given in inputs:
            if is_object_url(given):
                list_objects(given, storage or Storage())
        return []
    rows = stream_inputs(
        inputs,
        mapping=dict(options.mapping) or None,
        encoding=options.encoding,
        separator=options.separator,
        batch_rows=options.batch_rows,
        constants=dict(options.constants),
    )
    for _ in rows:  # one iteration per batch, not per row
        pass
    info = rows.info
    if info.rows == 0:
        names = ", ".join(info.files)
        raise InputError(
            f"{names}: no data rows (the file is empty or has a header only); "
            "nothing to read as places"
        )
    return [
        f"{name}: no data rows (empty, or a header only); the other files are run"
        for name in info.empty_files
    ]


@dataclass(frozen=True)
class StoredRun:
    """A run as the warehouse records it."""

    run_id: str
    status: str
    message: str | None


def stored_status(db: str, run_id: str) -> StoredRun:
    """The run's status in the warehouse; `UnknownRun` when the file or the run is not there."""
    from placeflow.store.warehouse import reading

    if not Path(db).is_file():
        raise UnknownRun(f"no warehouse at {db}; nothing to resume (check --db)")
    with reading(db) as con:
        row = con.execute("select status, message from runs where run_id = ?", [run_id]).fetchone()
    if row is None:
        raise UnknownRun(f"no run {run_id} in {db}; `placeflow runs --db {db}` lists them")
    return StoredRun(run_id, str(row[0]), None if row[1] is None else str(row[1]))


FINISHED = frozenset({"completed", "refused", "all_rejected"})
"""Statuses a resume has nothing to do for."""


def check_db(db: str) -> None:
    """`UsageError` when the warehouse path cannot be written (read-only place, not a folder)."""
    path = Path(db)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            with path.open("ab"):  # opened for writing, nothing written
                pass
        else:
            with path.open("xb"):
                pass
            path.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"--db {db} cannot be written ({reason}); choose another path") from None
