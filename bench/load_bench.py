"""Per-chunk CPU of the fetch and load stages, on real result files over loopback HTTP.

Usage: ``python3 -m uv run --frozen python bench/load_bench.py [--chunks N] [--rows R]``

N chunks of R enrich places (default attributes) are rendered by the sandbox's own result
renderer (`placeflow.emulator.synth`, gzip level as the sandbox writes) and served by a plain
file server in a child process (so its CPU is not counted). A new warehouse holds the run's
plan; then, chunk by chunk, the pipeline's own `fetch` stage (download, sha256 and size, the
chunk's rows) and `load` stage (one DuckDB read of the file into enrichments, verified, settled)
run in this process, their CPU (user + system, all threads) taken with time.process_time.
For scale, two references on the same files: the download with the gzip stream decompressed
and its lines counted in Python (``check_content=True``, what the fetch did before), and a bare
DuckDB ``create table as select * from read_json(all files, format='newline_delimited')``.
The figures go to bench/RESULTS.md between ``<!-- load-bench:start -->`` and ``:end -->``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from placeflow.api.client import PlaceApiClient
from placeflow.api.download import download_result
from placeflow.api.models import JobStatus
from placeflow.emulator.jobs import GZIP_LEVEL
from placeflow.emulator.synth import SynthSettings, render_job_lines
from placeflow.pipeline.fetch import fetch
from placeflow.pipeline.load import load
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import connect, insert_frame

RESULTS = Path(__file__).with_name("RESULTS.md")
START, END = "<!-- load-bench:start -->", "<!-- load-bench:end -->"
RUN_ID = "run_load_bench"
NOW = "2026-11-23T12:00:00Z"


def render(chunks: int, rows: int, folder: Path) -> list[tuple[list[str], Path]]:
    """Each chunk's place keys and its gzipped result file, as the sandbox would answer."""
    out = []
    for c in range(chunks):
        keys = [f"pk_{c:04d}_{i:06d}" for i in range(rows)]
        pois = [
            {"id": k, "poi_name": f"Cafe {c} {i}", "city": "Berlin", "country": "DE"}
            for i, k in enumerate(keys)
        ]
        body, _ = render_job_lines("enrich", pois, settings=SynthSettings(), now=NOW)
        path = folder / f"job_{c:04d}.jsonl.gz"
        path.write_bytes(gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0))
        out.append((keys, path))
    return out


def plan(con: duckdb.DuckDBPyConnection, files: list[tuple[list[str], Path]]) -> None:
    """The run, its planned places and its submitted jobs with their holds."""
    at = datetime.now(UTC)
    attrs = "opening_hours,phone,website,existence,open_closed"
    con.execute(
        "insert into runs (run_id, created_at, status, mode, signature, attributes)"
        " values (?, ?, 'running', 'enrich', ?, ?)",
        [RUN_ID, at, f"enrich|{attrs}|no-summary", attrs],
    )
    for c, (keys, _) in enumerate(files):
        insert_frame(
            con,
            "run_places",
            pl.DataFrame(
                {
                    "run_id": RUN_ID,
                    "place_key": keys,
                    "chunk_no": pl.Series([c] * len(keys), dtype=pl.Int32),
                    "position": pl.Series(range(len(keys)), dtype=pl.Int32),
                    "request": [f'{{"id":"{k}","poi_name":"Cafe"}}' for k in keys],
                }
            ),
        )
        con.execute(
            "insert into jobs (run_id, chunk_no, route, kind, rows, status, batch_id,"
            " credits_held, created_at) values (?, ?, 'job', 'enrich', ?, 'submitted', ?, ?, ?)",
            [RUN_ID, c, len(keys), f"job_{c:04d}", len(keys), at],
        )
        con.execute(
            "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)"
            " values (?, ?, ?, 'hold', ?, ?, 'held at submission')",
            [RUN_ID, c, f"job_{c:04d}", len(keys), at],
        )


def status_of(c: int, rows: int, path: Path, base: str) -> JobStatus:
    body = path.read_bytes()
    file = {
        "url": f"{base}/{path.name}",
        "size_bytes": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
        "expires_at": "2099-01-01T00:00:00Z",
    }
    return JobStatus.model_validate(
        {
            "batch_id": f"job_{c:04d}",
            "status": "completed",
            "created_at": NOW,
            "total_items": rows,
            "results": {"format": "jsonl.gz", "total_items": rows, "files": [file]},
        }
    )


def serve(folder: Path) -> tuple[subprocess.Popen[str], str]:
    """A stdlib file server over `folder` on a free loopback port, in a child process."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...)"
    port = line.split(" port ")[1].split()[0]
    return proc, f"http://127.0.0.1:{port}"


def measure(chunks: int, rows: int, work: Path) -> dict[str, Any]:
    files = render(chunks, rows, work)
    con = connect(work / "w.duckdb")
    plan(con, files)
    state = RunState(con, RUN_ID)
    proc, base = serve(work)
    fetch_s: list[float] = []
    load_s: list[float] = []
    checked_s: list[float] = []
    try:
        with PlaceApiClient(base_url=base, api_key="not-sent") as api:
            for c, (_, path) in enumerate(files):
                status = status_of(c, rows, path, base)
                t0 = time.process_time()
                got = fetch(api, state, status, workdir=work / "runs", emit=lambda _: None)
                t1 = time.process_time()
                assert got is not None
                load(state, got, kind="enrich", emit=lambda _: None)
                t2 = time.process_time()
                fetch_s.append(t1 - t0)
                load_s.append(t2 - t1)
                download_result(api, status, work / "checked")  # the full Python check
                checked_s.append(time.process_time() - t2)
    finally:
        proc.terminate()
        proc.wait()
    loaded = con.execute(
        "select count(*), count(*) filter (where success), count(*) filter (where billable)"
        " from enrichments"
    ).fetchone()
    t = time.process_time()
    con.execute("checkpoint")  # the write-ahead log folded into the file, as a run's close does
    checkpoint_s = time.process_time() - t
    con.close()
    bare_db = work / "bare.duckdb"
    t = time.process_time()
    bare = duckdb.connect(str(bare_db))
    bare.execute(
        "create table results as select * from read_json(?, format = 'newline_delimited')",
        [[str(p) for _, p in files]],
    )
    bare_rows = bare.execute("select count(*) from results").fetchone()
    bare.close()
    bare_s = time.process_time() - t
    assert loaded is not None and bare_rows is not None and loaded[0] == bare_rows[0]
    return {
        "fetch": fetch_s,
        "load": load_s,
        "checked": checked_s,
        "bare": bare_s / chunks,
        "checkpoint": checkpoint_s / chunks,
        "loaded": loaded,
        "size": statistics.mean(p.stat().st_size for _, p in files),
    }


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} / {statistics.mean(values) * 1000:.0f}"


def section(m: dict[str, Any], chunks: int, rows: int, command: str, loads: list[float]) -> str:
    per = chunks * rows
    million = 1_000_000 / per * chunks  # chunks of this size in 1M rows
    rows_, ok, billable = m["loaded"]
    lines = [
        START,
        "# Fetch and load per chunk",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.now(UTC).isoformat(timespec='seconds')}; machine: {platform.machine()},"
        f" {os.cpu_count()} cores, Python {platform.python_version()}, duckdb {duckdb.__version__}",
        f"- {chunks} chunks of {rows:,} enrich places (default attributes), rendered by the"
        f" sandbox's result renderer, {m['size'] / 1e6:.2f} MB gzipped each, served over loopback"
        " by a file server in a child process; warehouse new; CPU = user + system of this"
        " process (DuckDB's threads included), per chunk",
        f"- load average (1 min) at the start and the end: {loads[0]:.1f}, {loads[1]:.1f}"
        " (2 shared cores: other work stretches CPU figures too; compare within one run)",
        f"- loaded: {rows_:,} rows, {ok:,} succeeded, {billable:,} billable (the bare read: the"
        " same row count)",
        "",
        "| per chunk | CPU ms (median / mean) | x bare read | at 1M rows (CPU s) |",
        "|---|---:|---:|---:|",
    ]
    bare = m["bare"]
    for label, values in (
        ("fetch stage (download, sha256, size; records the file)", m["fetch"]),
        ("load stage (one read into enrichments, verified, settled, committed)", m["load"]),
        (
            "checkpoint of the loaded chunks' log, at the end (not in the load stage)",
            [m["checkpoint"]],
        ),
        ("reference: download with the gzip stream checked in Python", m["checked"]),
    ):
        mean = statistics.mean(values)
        lines.append(f"| {label} | {ms(values)} | {mean / bare:.2f} | {mean * million:.1f} |")
    lines.append(
        f"| reference: bare DuckDB read_json of all files into one table | {bare * 1000:.0f}"
        f" | 1.00 | {bare * million:.1f} |"
    )
    fetch_1m = statistics.mean(m["fetch"]) * million
    load_1m = statistics.mean(m["load"]) * million
    lines += [
        "",
        f"Targets at 1M rows: load <= 15 CPU s: {load_1m:.1f} s,"
        f" **{'met' if load_1m <= 15 else 'missed'}**; fetch <= 3 CPU s: {fetch_1m:.1f} s,"
        f" **{'met' if fetch_1m <= 3 else 'missed'}**.",
        END,
    ]
    return "\n".join(lines)


def write(text: str) -> None:
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    if START in old and END in old:
        new = old[: old.index(START)] + text + old[old.index(END) + len(END) :]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    command = (
        "python3 -m uv run --frozen python bench/load_bench.py"
        + (f" --chunks {args.chunks}" if args.chunks != 20 else "")
        + (f" --rows {args.rows}" if args.rows != 10_000 else "")
    )
    work = Path(tempfile.mkdtemp(prefix="load-bench-"))
    try:
        start = os.getloadavg()[0]
        m = measure(args.chunks, args.rows, work)
        text = section(m, args.chunks, args.rows, command, [start, os.getloadavg()[0]])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write(text)
    print(text)


if __name__ == "__main__":
    main()
