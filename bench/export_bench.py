"""Warehouse-load throughput at 1M places_latest rows to Parquet, Delta and PostgreSQL, beside
bare baselines.

Builds a warehouse of N places (tests/export/dataset.py), starts a throwaway PostgreSQL
(tests/pgserver.py), and times, each on the same warehouse:

- Parquet: `placeflow.exporters.export` to a fresh directory, against a bare DuckDB
  `COPY (select * from places_latest) TO '...' (FORMAT parquet, COMPRESSION zstd)`;
- PostgreSQL: `placeflow.exporters.export` to a fresh database (ADBC COPY into staging,
  upsert), against a bare `COPY places_latest FROM STDIN` through psql of DuckDB's CSV of the
  same rows into a table of the same types and primary key;
- Delta: `placeflow.exporters.export` to a fresh `delta://` folder, against a bare
  `deltalake.write_deltalake` of DuckDB's Arrow stream of the same rows.

Then a run that changes a tenth of the places is added to the warehouse and each destination
takes the incremental export (Parquet: one more file; PostgreSQL and Delta: a merge by key).

Writes its own section of bench/RESULTS.md (replaced on each run).

    python3 -m uv run --frozen python bench/export_bench.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.*

import duckdb

from placeflow.exporters.export import TABLES, export, plan_table
from placeflow.exporters.postgres import pg_type
from placeflow.store.warehouse import connect
from placeflow.support.redact import Secret
from tests.export.dataset import T0, add_run, build
from tests.pgserver import start

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- export_bench:begin -->", "<!-- export_bench:end -->"


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="placeflow-export-bench-"))
    db = work / "warehouse.duckdb"
    con = connect(db)
    build(con, args.rows)
    rows = con.execute("select count(*) from places_latest").fetchall()[0][0]
    con.close()

    def bare_parquet() -> None:
        with duckdb.connect(str(db)) as c:
            c.execute(
                f"copy (select * from places_latest) to '{work}/bare.parquet'"
                " (format parquet, compression zstd)"
            )

    pq_bare = timed(bare_parquet)
    pq_ours = timed(lambda: export(db, str(work / "lake"), ["places_latest"]))

    def bare_delta() -> None:
        from deltalake import write_deltalake

        with duckdb.connect(str(db)) as c:
            reader = c.sql("select * from places_latest").to_arrow_reader(100_000)
            write_deltalake(str(work / "bare-delta"), reader, mode="error")

    dl_bare = timed(bare_delta)
    dl_ours = timed(lambda: export(db, f"delta://{work / 'delta'}", ["places_latest"]))

    with start(settings={"max_wal_size": "'4GB'"}) as pg:
        pg.psql("create database bare")
        pg.psql("create database ours")
        with duckdb.connect(str(db)) as c:
            plan = plan_table(c, TABLES["places_latest"], None)
        cols = ", ".join(f'"{col.name}" {pg_type(col.duck_type)}' for col in plan.columns)
        csv = work / "places.csv"

        def bare_pg() -> None:
            with duckdb.connect(str(db)) as c:
                c.execute(
                    f"copy (select * from places_latest) to '{csv}' (format csv, header false)"
                )
            env = {**os.environ, "PGPASSWORD": pg.password}
            subprocess.run(
                [
                    "psql",
                    "-X",
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-h",
                    pg.host,
                    "-p",
                    str(pg.port),
                    "-U",
                    pg.user,
                    "-d",
                    "bare",
                    "-c",
                    f"create table places_latest ({cols}, primary key (place_key))",
                    "-c",
                    f"\\copy places_latest from '{csv}' with (format csv)",
                ],
                env=env,
                check=True,
            )

        pg_bare = timed(bare_pg)
        url = pg.url().rsplit("/", 1)[0] + "/ours"
        password = Secret(pg.password)
        pg_ours = timed(lambda: export(db, url, ["places_latest"], password=password))
        ours = dataclasses.replace(pg, database="ours")
        landed = ours.psql("select count(*) from places_latest").strip()

        # a tenth of the places answered again: the incremental export of each destination
        changed = args.rows // 10
        con = connect(db)
        add_run(con, "run_bench_refresh", first=0, last=changed, at=T0.replace(year=2027), salt=9)
        con.close()
        pq_inc = timed(lambda: export(db, str(work / "lake"), ["places_latest"]))
        dl_inc = timed(lambda: export(db, f"delta://{work / 'delta'}", ["places_latest"]))
        pg_inc = timed(lambda: export(db, url, ["places_latest"], password=password))
        after = ours.psql("select count(*) from places_latest").strip()
    from deltalake import DeltaTable

    in_delta = DeltaTable(str(work / "delta" / "places_latest")).to_pyarrow_table().num_rows
    print(
        f"parquet {pq_bare:.2f}/{pq_ours:.2f}/{pq_inc:.2f} s,"
        f" delta {dl_bare:.2f}/{dl_ours:.2f}/{dl_inc:.2f} s,"
        f" postgresql {pg_bare:.2f}/{pg_ours:.2f}/{pg_inc:.2f} s"
    )
    shutil.rmtree(work, ignore_errors=True)

    lines = [
        BEGIN,
        "## Warehouse export (bench/export_bench.py)",
        "",
        f"`python3 -m uv run --frozen python bench/export_bench.py --rows {args.rows}` on"
        f" {platform.machine()}, {os.cpu_count()} cores, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC;"
        f" places_latest of {rows:,} rows (synthetic enrichments: JSON opening hours, contacts,"
        " dates, timestamps, each place's request); first export (everything) to an empty"
        " destination, then the incremental export after a run that answered a tenth of the"
        " places again. PostgreSQL runs with fsync off (a throwaway server; both sides alike)."
        f" Load average (1 min) at the start and the end: {load_before:.1f},"
        f" {os.getloadavg()[0]:.1f} (2 shared cores: other work stretches every figure alike).",
        "",
        "| destination | bare baseline | placeflow export | x baseline | rows/s (placeflow)"
        f" | incremental, {changed:,} changed |",
        "|---|---:|---:|---:|---:|---:|",
        f"| Parquet (zstd) | {pq_bare:.2f} s (DuckDB `COPY ... TO parquet`) | {pq_ours:.2f} s"
        f" | {pq_ours / pq_bare:.2f} | {rows / pq_ours:,.0f} | {pq_inc:.2f} s (one more file) |",
        f"| Delta ({in_delta:,} rows after both) | {dl_bare:.2f} s (`write_deltalake` of DuckDB's"
        f" Arrow stream) | {dl_ours:.2f} s | {dl_ours / dl_bare:.2f} | {rows / dl_ours:,.0f}"
        f" | {dl_inc:.2f} s (merge by key) |",
        f"| PostgreSQL ({landed} rows landed, {after} after both) | {pg_bare:.2f} s (DuckDB CSV"
        f" + psql `COPY FROM STDIN`) | {pg_ours:.2f} s | {pg_ours / pg_bare:.2f}"
        f" | {rows / pg_ours:,.0f} | {pg_inc:.2f} s (merge by key) |",
        "",
        f"Target: within 2x of the baseline. Parquet"
        f" {'**met**' if pq_ours <= 2 * pq_bare else '**missed**'}, Delta"
        f" {'**met**' if dl_ours <= 2 * dl_bare else '**missed**'}, PostgreSQL"
        f" {'**met**' if pg_ours <= 2 * pg_bare else '**missed**'}.",
        END,
    ]
    results = ROOT / "bench" / "RESULTS.md"
    text = results.read_text(encoding="utf-8") if results.exists() else ""
    section = "\n".join(lines)
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    results.write_text(text, encoding="utf-8")
    print(section)


if __name__ == "__main__":
    main()
