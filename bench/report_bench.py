"""Run report benchmark: generation time and file size for a 1M-row run.

Builds a warehouse whose one run read 1,000,000 rows (synthesised straight into the tables in
DuckDB: rejects, duplicates, fresh rows, 700,000 places sent in 70 jobs with coordinates in 20
countries, their enrichments, the ledger and 5,000 changes), then times `placeflow report`
in a fresh process (imports included) and in-process, and writes its own section of
bench/RESULTS.md.

    python3 -m uv run --frozen python bench/report_bench.py [--keep DIR]

`--keep DIR` builds the warehouse once in DIR (bench/work/report is a good place) and reuses it
on the next runs (the synthesis takes longer than the report itself).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN, END = "<!-- report-bench:begin -->", "<!-- report-bench:end -->"
RUN_ID = "run_20260101T000000_bench1"
ROWS, REJECTED, DUPLICATES, FRESH = 1_000_000, 20_000, 250_000, 30_000
SENT = ROWS - REJECTED - DUPLICATES - FRESH
CHUNK = 10_000
CHANGES = 5_000
TARGET_SECONDS, TARGET_BYTES = 10.0, 5_000_000

SYNTH = f"""
insert into runs (run_id, created_at, finished_at, status, mode, attributes, signature, inputs,
    target, rows_read, rejected, duplicates, skipped_fresh, submitted, succeeded, failed,
    credits_estimated, usage_before, usage_after)
select '{RUN_ID}', timestamptz '2026-01-01 00:00:00+00', timestamptz '2026-01-01 00:06:10+00',
    'completed', 'enrich', 'opening_hours,phone,website,existence,open_closed', 'enrich|bench',
    '["bench/places_1m.csv"]', 'embedded sandbox', {ROWS}, {REJECTED}, {DUPLICATES}, {FRESH},
    {SENT}, {SENT} - {SENT} // 100, {SENT} // 100, {SENT}, 1000, 1000 + {SENT} - {SENT} // 100;

insert into run_rows (run_id, row_ord, source_file, source_row, place_key, disposition, note)
select '{RUN_ID}', i, 'bench/places_1m.csv', i + 1,
    case when i < {REJECTED} then null else 'pk_' || (i % {SENT + FRESH}) end,
    case when i < {REJECTED} then 'rejected'
         when i < {REJECTED + DUPLICATES} then 'duplicate'
         when i < {REJECTED + DUPLICATES + FRESH} then 'skipped_fresh'
         else 'submitted' end,
    null
from range({ROWS}) t(i);

insert into rejects (run_id, row_ord, source_file, source_row, field, reason, raw)
select '{RUN_ID}', i, 'bench/places_1m.csv', i + 1,
    ['poi_name', 'latitude', 'country', null, 'longitude'][1 + i % 5],
    ['the name is missing', 'latitude is outside -90..90', 'unknown country',
     'the row has no address and no coordinates', 'longitude is not a number'][1 + i % 5],
    '{{}}'
from range({REJECTED}) t(i);

insert into run_places (run_id, place_key, chunk_no, position, request)
select '{RUN_ID}', 'pk_' || i, i // {CHUNK}, i % {CHUNK},
    json_object('id', 'pk_' || i, 'poi_name', 'Place ' || i, 'street', i || ' Main Street',
        'country', ['US','FR','DE','GB','IT','ES','NL','BE','CH','AT','SE','NO','DK','PL',
                    'PT','IE','CA','MX','BR','JP'][1 + i % 20],
        'latitude', round(-50 + (hash(i) % 11000) / 100.0, 4),
        'longitude', round(-170 + (hash(i * 7) % 34000) / 100.0, 4))::varchar
from range({SENT}) t(i);

insert into enrichments (run_id, place_key, chunk_no, position, success, attributes_requested,
    existence_confidence, operational_status, closure_confidence, closure_reason,
    opening_hours_confidence, phone_confidence, website_confidence, error_code, billable,
    loaded_at)
select '{RUN_ID}', 'pk_' || i, i // {CHUNK}, i % {CHUNK}, i % 100 <> 0,
    'opening_hours,phone,website,existence,open_closed',
    case when i % 100 <> 0 then (hash(i) % 1000) / 1000.0 end,
    case when i % 100 = 0 then null
         else ['open','open','open','open','open','closed','unknown','not_exists'][1 + i % 8]
    end,
    case when i % 8 = 5 then 0.9 end,
    case when i % 8 = 5 then ['permanent','temporary','relocated'][1 + i % 3] end,
    ['high','medium','low',null][1 + i % 4], ['high','medium',null][1 + i % 3],
    ['high',null,'low'][1 + i % 3],
    case when i % 100 = 0 then 'EXTERNAL_API_ERROR' end, i % 100 <> 0,
    timestamptz '2026-01-01 00:00:00+00' + to_seconds(20 + (i // {CHUNK}) * 5)
from range({SENT}) t(i);

insert into jobs (run_id, chunk_no, route, kind, rows, status, rows_loaded, credits_held,
    credits_charged, credits_released, created_at, submitted_at, finished_at, loaded_at)
select '{RUN_ID}', c, 'job', 'enrich', {CHUNK}, 'loaded', {CHUNK}, {CHUNK}, {CHUNK} - 100, 100,
    timestamptz '2026-01-01 00:00:05+00',
    timestamptz '2026-01-01 00:00:05+00' + to_seconds(c * 5),
    timestamptz '2026-01-01 00:00:05+00' + to_seconds(c * 5 + 10),
    timestamptz '2026-01-01 00:00:05+00' + to_seconds(c * 5 + 12)
from range({SENT // CHUNK}) t(c);

insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)
select '{RUN_ID}', c, 'job_' || c, k.kind,
    case k.kind when 'hold' then {CHUNK} when 'charge' then {CHUNK} - 100 else 100 end,
    timestamptz '2026-01-01 00:00:05+00' + to_seconds(c * 5), 'bench'
from range({SENT // CHUNK}) t(c)
cross join (values ('hold'), ('charge'), ('release')) k(kind);
"""

CHANGES_SQL = f"""
insert into place_changes by name
select '{RUN_ID}' as run_id, 'pk_' || (i * 131) as place_key,
    ['operational_status','phone','website','coordinates'][1 + i % 4] as field,
    ['closed','phone','website','moved'][1 + i % 4] as kind,
    'before' as old_value, 'after' as new_value, 'run_earlier' as old_run_id,
    timestamptz '2026-01-01 00:05:00+00' as outcome_at,
    timestamptz '2026-01-01 00:06:00+00' + to_seconds(i) as detected_at
from range({CHANGES}) t(i)
"""

COLD = """
import argparse, sys, time
t0 = time.perf_counter()
from placeflow.cli.report import add_parsers
p = argparse.ArgumentParser(); add_parsers(p.add_subparsers(dest="command"))
args = p.parse_args(["report", sys.argv[1], "--db", sys.argv[2], "--out", sys.argv[3]])
code = args.func(args)
print(f"{time.perf_counter() - t0:.3f}")
sys.exit(code)
"""


def build(db: Path) -> float:
    from placeflow.store.warehouse import connect

    started = time.perf_counter()
    with connect(db) as con:
        con.execute(SYNTH)
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        if "place_changes" in tables:
            con.execute(CHANGES_SQL)
        con.execute("checkpoint")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the warehouse here once and reuse it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        db = (args.keep or Path(tmp)) / "bench.duckdb"
        if args.keep and db.exists():
            built = float((args.keep / "built_seconds").read_text())
        else:
            db.parent.mkdir(parents=True, exist_ok=True)
            built = build(db)
            if args.keep:
                (args.keep / "built_seconds").write_text(f"{built:.3f}")
        out = Path(tmp) / "report.html"
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cold = subprocess.run(
            [sys.executable, "-c", COLD, RUN_ID, str(db), str(out)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        cold_wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cold_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        load = os.getloadavg()[0]
        cold_inside = float(cold.stdout.strip().splitlines()[-1])
        size = out.stat().st_size
        page = out.read_text(encoding="utf-8")
        charts = page.count('<svg class="chart"')
        sections = re.findall(r'<section id="([a-z]+)"', page)

        from placeflow.reporting import write_report

        with duckdb.connect(str(db), read_only=True) as con:
            write_report(con, RUN_ID, out)  # warm imports and caches
            warm = []
            for _ in range(3):
                t0 = time.perf_counter()
                write_report(con, RUN_ID, out)
                warm.append(time.perf_counter() - t0)
    text = render(built, cold_wall, cold_inside, cold_cpu, load, min(warm), size, charts, sections)
    write_section(text)
    print(text)


def render(
    built: float, cold_wall: float, cold_inside: float, cold_cpu: float, load: float,
    warm: float, size: int, charts: int, sections: list[str],
) -> str:  # fmt: skip
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f", {int(f.readline().split()[1]) / 1024**2:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    ok_t = "**met**" if cold_wall < TARGET_SECONDS else "**missed**"
    ok_s = "**met**" if size < TARGET_BYTES else "**missed**"
    return "\n".join([
        BEGIN,
        "",
        "# Run report benchmark",
        "",
        "- command: `python3 -m uv run --frozen python bench/report_bench.py`",
        f"- date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores{mem}, {platform.system()}"
        f" {platform.release()}, Python {platform.python_version()}; duckdb"
        f" {version('duckdb')}",
        f"- warehouse: one run of {ROWS:,} rows read ({REJECTED:,} rejected, {DUPLICATES:,}"
        f" duplicates, {FRESH:,} fresh), {SENT:,} places sent in {SENT // CHUNK} jobs with"
        f" coordinates in 20 countries, their enrichments, ledger and {CHANGES:,} changes,"
        f" synthesised in DuckDB in {built:.1f} s",
        f"- load average when the report ran: {load:.1f} on {os.cpu_count()} cores (other work"
        " on the machine stretches wall times; CPU seconds are the process's own)",
        "",
        "| measure | value | target |",
        "|---|---:|---|",
        f"| `placeflow report` in a fresh process, wall (imports included) | {cold_wall:.2f} s"
        f" | < {TARGET_SECONDS:.0f} s {ok_t} |",
        f"| of which inside the process (imports, queries, charts, write) | {cold_inside:.2f} s"
        " | |",
        f"| CPU seconds of that process (user + sys) | {cold_cpu:.2f} s | |",
        f"| `write_report` in a warm process (best of 3) | {warm:.2f} s | |",
        f"| file size | {size / 1e6:.2f} MB ({size:,} bytes) | < 5 MB {ok_s} |",
        f"| charts (inline SVG) | {charts} | |",
        f"| sections | {', '.join(sections)} | |",
        "",
        END,
    ])  # fmt: skip


def write_section(text: str) -> None:
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
