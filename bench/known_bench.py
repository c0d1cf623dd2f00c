"""The look-up of known places at warehouse scale: `known_places` over 10M sent rows.

A warehouse file holds `run_rows` of N submitted places (synthetic, in SQL: a name each, 2,000
cities, US postcodes, house numbers, coordinates, phones); a new run brings M places, half of
them known ones. Their block keys are taken as a run's dedupe takes them
(`new_block_keys`), then `known_places` selects the known places sharing one, in a fresh
process: its wall and CPU time, the rows it returns and its peak RSS (VmHWM).

    .venv/bin/python bench/known_bench.py [--known 10000000] [--new 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

_PLACES = """
select
    'run_' || (i % 10) as run_id,
    'pk_' || left(md5(i::varchar), 24) as place_key,
    'file_' || (i % 10) || '.csv' as source_file,
    null::varchar as source_id,
    'name' || i || ' ' || chr((65 + (i % 26))::integer) as poi_name,
    ((i * 7) % 9999 + 1) || ' Main St' as street,
    null::varchar as address,
    'City ' || (i % 2000) as city,
    null::varchar as region,
    lpad(((i * 13) % 99999)::varchar, 5, '0') as postcode,
    'US' as country,
    30 + (i % 2000) * 0.01 + (i % 97) * 0.0001 as latitude,
    -120 + (i % 1999) * 0.01 as longitude,
    '5' || lpad(i::varchar, 9, '0') as phone,
    null::varchar as website,
    'submitted' as disposition
from range({start}, {stop}) as r(i)
"""


def build(path: Path, known: int) -> None:
    import duckdb

    with duckdb.connect(str(path)) as con:
        con.execute(f"create table run_rows as {_PLACES.format(start=0, stop=known)}")


def look_up(path: str, new: int, known: int) -> None:
    """Child: the new places' keys and the look-up, timed."""
    import duckdb
    import polars as pl

    from placeflow.pipeline.known import known_places, new_block_keys

    fresh = _PLACES.format(start=known - new // 2, stop=known + new // 2)
    with duckdb.connect(":memory:") as scratch:
        scratch.execute(f"create temp table pf_new as {fresh}")
        keys = new_block_keys(scratch, "select * from pf_new")
    with duckdb.connect(path, read_only=True) as con:
        con.execute("set memory_limit = '512MB'")
        t0, c0 = time.perf_counter(), time.process_time()
        found: pl.DataFrame = known_places(con, keys)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = 0.0
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    print(json.dumps({"keys": keys.height, "found": found.height, "seconds": seconds,
                      "cpu": cpu, "peak_mb": peak, "load": os.getloadavg()[0]}))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--known", type=int, default=10_000_000)
    p.add_argument("--new", type=int, default=100_000)
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    if args.child:
        look_up(args.child[0], int(args.child[1]), int(args.child[2]))
        return 0
    with tempfile.TemporaryDirectory(prefix="pf-known-bench-") as tmp:
        db = Path(tmp) / "wh.duckdb"
        t0 = time.perf_counter()
        build(db, args.known)
        built = time.perf_counter() - t0
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(db), str(args.new), str(args.known)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    r = json.loads(done.stdout.strip().splitlines()[-1])
    print(r)
    if not args.no_write:
        from matching_report import replace_section

        body = "\n".join([
            "# Known places at warehouse scale (bench/known_bench.py)",
            "",
            f"- command: `.venv/bin/python bench/known_bench.py --known {args.known}"
            f" --new {args.new}`; date {datetime.now(UTC).isoformat(timespec='seconds')};"
            f" {os.cpu_count()} cores, load {r['load']:.1f} as the look-up began",
            f"- `run_rows` of {args.known:,} sent places (synthetic, built in {built:.0f} s); a"
            f" new run of {args.new:,} places, half of them known ones; DuckDB capped at 512 MB",
            "",
            "| known places | new places | their block keys | known places selected | wall s"
            " | CPU s | peak RSS MB |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {args.known:,} | {args.new:,} | {r['keys']:,} | {r['found']:,}"
            f" | {r['seconds']:.1f} | {r['cpu']:.1f} | {r['peak_mb']:,.0f} |",
            "",
            "One scan of run_rows computing each row's block keys, the new keys probed in a hash"
            " table: the selection is what the fuzzy pass is handed beside the new places.",
        ])  # fmt: skip
        replace_section(Path(args.out), "known-bench", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
