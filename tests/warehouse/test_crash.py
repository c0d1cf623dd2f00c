"""A load killed with SIGKILL at any moment leaves the chunk loaded once or not at all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

from placeflow.state.checks import run_checks
from placeflow.store.warehouse import connect
from tests.warehouse.dataset import add_rows
from tests.warehouse.helpers import add_run, enrich_line, keys, plan_chunk, write_lines

LOADER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from placeflow.pipeline.load import load_result
    from placeflow.store.warehouse import connect

    class Paused:
        # The connection, pausing (told on stdout) once the second load has written its rows.
        def __init__(self, con):
            self.con, self.loads = con, 0
        def execute(self, sql, *args, **kwargs):
            result = self.con.execute(sql, *args, **kwargs)
            if self.loads == 1 and sql.startswith("insert into enrichments"):
                print("inside", flush=True)
                sys.stdin.readline()  # never answered: the test kills the process here
            return result

    con = Paused(connect(sys.argv[1]))
    while True:
        load_result(con, run_id="r1", chunk_no=0, kind="enrich", path=Path(sys.argv[2]),
                    billing="job", held=5000, ref="job_r1_0")
        con.loads += 1
        print("loaded", flush=True)
""")


def test_sigkill_during_repeated_loads_leaves_one_consistent_load(tmp_path: Path) -> None:
    """Killed mid-load (rows written, uncommitted): one load's rows, credits balanced."""
    db = tmp_path / "w.duckdb"
    con = connect(db)
    add_run(con, "r1")
    places = keys(5000)
    add_rows(con, "r1", [(k, "submitted") for k in places])
    plan_chunk(con, "r1", 0, places)
    lines = [enrich_line(k, success=i % 10 != 0) for i, k in enumerate(places)]
    path = write_lines(tmp_path / "r.jsonl.gz", lines)
    con.close()
    with subprocess.Popen(
        [sys.executable, "-c", LOADER, str(db), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as loader:
        assert loader.stdout is not None
        assert loader.stdout.readline().strip() == "loaded"
        assert loader.stdout.readline().strip() == "inside"  # the second load, mid-transaction
        loader.send_signal(signal.SIGKILL)
        loader.wait(timeout=30)
    con = connect(db)
    counts = con.execute(
        "select count(*), count(*) filter (where billable) from enrichments"
    ).fetchone()
    ledger = con.execute(
        "select kind, count(*), sum(credits) from credit_ledger group by kind order by kind"
    ).fetchall()
    job = con.execute(
        "select status, rows_loaded, credits_charged, credits_released from jobs"
    ).fetchone()
    problems = {name: n for name, n in run_checks(con).items() if n}
    con.close()
    assert counts == (5000, 4500)
    assert ledger == [("charge", 1, 4500), ("hold", 1, 5000), ("release", 1, 500)]
    assert job == ("loaded", 5000, 4500, 500)
    assert problems == {}


CREATOR = textwrap.dedent("""
    import os, signal, sys
    from placeflow.store.warehouse import connect
    con = connect(sys.argv[1])
    con.execute("insert into runs (run_id, created_at, status, mode, signature, key_hint)"
                " values ('r1', now(), 'running', 'validate', 'validate||no-summary', '…a1b2')")
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_sigkill_right_after_creating_the_database(tmp_path: Path) -> None:
    """A database killed before its first checkpoint replays its WAL offline and reopens."""
    db = tmp_path / "w.duckdb"
    subprocess.run(
        [sys.executable, "-c", CREATOR, str(db)],
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert Path(f"{db}.wal").exists()
    with duckdb.connect(str(db)) as con:
        assert con.execute("select key_hint from runs").fetchall() == [("…a1b2",)]
    connect(db).close()
