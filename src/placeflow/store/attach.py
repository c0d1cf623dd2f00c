"""The warehouse read beside another database: attached read-only to a run's scratch staging.

A run prepares a large input in a scratch database with the warehouse let go
(`placeflow.runner.orchestrate`). The fresh stage's lookup and the plan read the warehouse a
great deal (every outcome, every place sent before) without writing it. Attached read-only,
the file is shared with every other reader while they run: only writers wait (any process
writing the warehouse, this run's own writer included, which is let go meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from placeflow.store.dbfile import Backoff
from placeflow.store.warehouse import FILES

ALIAS = "pf_warehouse"
"""The attached warehouse's name in the scratch database."""


@contextmanager
def attached(con: duckdb.DuckDBPyConnection, path: Path | str, *, wait: float) -> Iterator[bool]:
    """In the block, `con`'s unqualified names are the warehouse's at `path` (its tables,
    views and macros; temporary tables stay `con`'s own), attached read-only; waiting up to
    `wait` s while another process writes it (`WarehouseBusy` after). False (nothing attached)
    when this process has the file open otherwise: DuckDB refuses a second instance of one file
    in a process, so a run in another thread of it keeps its hold (the caller reads the
    warehouse in its own hold instead, as before), and the run's own `Writer` must be let go."""
    backoff = Backoff(path, wait)
    own = con.execute("select current_database()").fetchall()[0][0]
    quoted = str(path).replace("'", "''")  # a path is a string literal to ATTACH
    while True:
        try:
            with FILES:  # not while another thread of this process closes the file
                con.execute(f"attach '{quoted}' as {ALIAS} (read_only)")
            break
        except duckdb.ResourceInUseException:  # this process has it open: not beside it
            yield False
            return
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            backoff.refused(exc)
    try:
        con.execute(f"use {ALIAS}")
        yield True
    finally:
        con.execute(f'use "{own}"')
        with FILES:
            con.execute(f"detach {ALIAS}")
