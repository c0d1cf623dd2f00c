"""A flow that only records that it ran, for the scheduled-deployment test: it proves the
server, the scheduler and the worker without depending on the pipeline."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
from prefect import flow
from prefect.runtime import flow_run


@flow(name="scheduled_probe")
def scheduled_probe(db: str) -> str:
    """Append this flow run's id and time to `probe_runs` in the DuckDB file `db`."""
    run_id = str(flow_run.get_id())
    with duckdb.connect(db) as con:
        con.execute("create table if not exists probe_runs (run_id varchar, ran_at timestamptz)")
        con.execute("insert into probe_runs values (?, ?)", [run_id, datetime.now(UTC)])
    return run_id
