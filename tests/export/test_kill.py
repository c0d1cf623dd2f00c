"""SIGKILL an export at a seeded point, run it again: the destination is exactly what one clean
export leaves. The killed export is a real subprocess that kills itself at the chosen step."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from placeflow.exporters.export import export
from placeflow.store.warehouse import connect
from placeflow.support.redact import Secret
from tests.export.dataset import T0, add_run
from tests.export.test_postgres import pg_rows
from tests.pgserver import PgServer

ROOT = Path(__file__).resolve().parents[2]
NOW = T0 + timedelta(days=1)
TABLES = ["places_latest", "runs"]
PARQUET_STEPS = [f"parquet:{s}:{t}" for t in TABLES for s in ("written", "renamed", "manifest")]
PG_STEPS = [
    *(f"postgres:{s}:{t}" for t in TABLES for s in ("staged", "merged")),
    "postgres:before-commit",
    "postgres:committed",
]

KILLER = """
import os, signal, sys
from datetime import datetime
from placeflow.config import postgres_password
from placeflow.exporters.export import export
db, dest, kill_at, now = sys.argv[1:5]
def step(name):
    if name == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
export(
    db, dest, {tables!r}, password=postgres_password(), now=datetime.fromisoformat(now),
    step=step,
)
"""


def killed_export(db: Path, dest: str, step: str, password: str = "") -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLER.format(tables=TABLES),
            str(db),
            dest,
            step,
            (NOW + timedelta(hours=3)).isoformat(),
        ],
        cwd=ROOT,
        env={**os.environ, "PGPASSWORD": password},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def refresh(db: Path) -> None:
    con = connect(db)
    add_run(con, "run_c", first=10, last=40, at=NOW + timedelta(hours=2), salt=5)
    con.close()


def seeded(steps: list[str], seed: int) -> str:
    return random.Random(seed).choice(steps)


def tree(root: Path) -> dict[str, object]:
    """Every file under root: a Parquet file's rows in order, the manifest without byte sizes
    (DuckDB's multi-threaded writer may lay the same rows out in different bytes)."""
    found: dict[str, object] = {}
    with duckdb.connect() as con:
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            name = p.relative_to(root).as_posix()
            if name.endswith(".parquet"):
                found[name] = con.execute(f"select * from read_parquet('{p}')").fetchall()
            else:
                text = json.loads(p.read_text())
                for table in text["tables"].values():
                    for f in table["files"]:
                        f.pop("bytes")
                found[name] = text
    return found


@pytest.mark.parametrize("step", [seeded(PARQUET_STEPS, 14)])
def test_killed_parquet_export_reruns_to_a_clean_export(
    db: Path, tmp_path: Path, step: str
) -> None:
    """Killed at `step` after a refresh, then rerun: same files, rows and manifest as clean."""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    for dest in (clean, killed):
        export(db, str(dest), TABLES, now=NOW)
    refresh(db)
    export(db, str(clean), TABLES, now=NOW + timedelta(hours=3))
    killed_export(db, str(killed), step)
    rerun = export(db, str(killed), TABLES, now=NOW + timedelta(hours=3))
    assert tree(killed) == tree(clean)
    assert sum(t.rows for t in rerun.tables) <= 31


@pytest.mark.slow
@pytest.mark.parametrize("step", PARQUET_STEPS)
def test_killed_parquet_export_every_step(db: Path, tmp_path: Path, step: str) -> None:
    """Every kill point of a Parquet export reruns to the clean export's files."""
    test_killed_parquet_export_reruns_to_a_clean_export(db, tmp_path, step)


def _pg_kill_case(db: Path, pg: PgServer, step: str) -> None:
    clean_name = f"{pg.database}_clean"
    pg.psql(f"create database {clean_name}")
    clean = PgServer(pg.host, pg.port, pg.user, pg.password, clean_name, pg.socket_dir, pg.bin_dir)
    password = Secret(pg.password)
    for server in (clean, pg):
        export(db, server.url(), TABLES, password=password, now=NOW)
    refresh(db)
    export(db, clean.url(), TABLES, password=password, now=NOW + timedelta(hours=3))
    killed_export(db, pg.url(), step, pg.password)
    export(db, pg.url(), TABLES, password=password, now=NOW + timedelta(hours=3))
    for table in TABLES:
        assert pg_rows(pg, table) == pg_rows(clean, table), table


@pytest.mark.parametrize("step", [seeded(PG_STEPS, 14)])
def test_killed_postgres_export_reruns_to_a_clean_export(
    db: Path, pg_db: PgServer, step: str
) -> None:
    """Killed at `step` (before or after the commit), then rerun: PostgreSQL holds exactly
    what a clean export leaves."""
    _pg_kill_case(db, pg_db, step)


@pytest.mark.slow
@pytest.mark.parametrize("step", PG_STEPS)
def test_killed_postgres_export_every_step(db: Path, pg_db: PgServer, step: str) -> None:
    """Every kill point of a PostgreSQL export reruns to the clean export's rows."""
    _pg_kill_case(db, pg_db, step)


def delta_rows(root: Path) -> dict[str, list[tuple[object, ...]]]:
    """Each Delta table under root as deltalake reads it, rows in key order."""
    from deltalake import DeltaTable

    found = {}
    for table in TABLES:
        data = DeltaTable(str(root / table)).to_pyarrow_table().to_pylist()
        found[table] = sorted(tuple(r.values()) for r in data)
    return found


@pytest.mark.parametrize("step", [f"delta:committed:{t}" for t in TABLES])
def test_killed_delta_export_reruns_to_a_clean_export(db: Path, tmp_path: Path, step: str) -> None:
    """Killed after a table's commit, before the warehouse recorded it: the rerun reads the
    watermark from the Delta log, sends nothing twice, and the tables equal a clean export's."""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    for dest in (clean, killed):
        export(db, f"delta://{dest}", TABLES, now=NOW)
    refresh(db)
    export(db, f"delta://{clean}", TABLES, now=NOW + timedelta(hours=3))
    killed_export(db, f"delta://{killed}", step)
    rerun = export(db, f"delta://{killed}", TABLES, now=NOW + timedelta(hours=3))
    assert delta_rows(killed) == delta_rows(clean)
    committed = step.rsplit(":", 1)[1]
    assert {t.table: t.rows for t in rerun.tables}[committed] == 0
