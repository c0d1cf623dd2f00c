"""The fresh stage at a million rows against a warehouse holding a million-row earlier run.

The realistic rerun: yesterday's run sent the same places (most succeeded, 1 in 20 failed, 1
in 100 three times in a row; 1 in 20 under an earlier key of the same core, before its region
was filled). Each implementation runs in a child process of its own and reports its CPU
seconds and the peak RSS of the stage (VmHWM reset as the stage starts) and of the process
(ru_maxrss). The frame implementation gets the deduped frame in memory (as the frame pipeline
held it); the staged one gets DEDUPED as a temporary table (as the streamed prepare leaves it).

    python bench/fresh_bench.py [--old-src PATH] [--write]

--old-src: the src/ folder of a placeflow whose fresh stage is the frame implementation (a
worktree of an earlier commit), measured beside this tree's. --write puts the figures in
bench/RESULTS.md (section fresh-sql).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from measure import stage_cost

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CHUNK = 10_000


def build(work: Path, csv: Path) -> None:
    """deduped.parquet (read, normalize, dedupe of `csv`) and wh.duckdb (the earlier runs)."""
    import polars as pl

    from placeflow.options import RunOptions
    from placeflow.pipeline.dedupe import dedupe
    from placeflow.pipeline.normalize import normalize
    from placeflow.pipeline.source import FileSource, read
    from placeflow.store.warehouse import connect

    options = RunOptions(mode="validate")
    rows, _ = read(FileSource((str(csv),)), options)
    places, _, _ = normalize(rows)
    del rows
    deduped, _ = dedupe(places)
    del places
    deduped.write_parquet(work / "deduped.parquet")
    con = connect(work / "wh.duckdb")
    con.execute(
        "insert into runs (run_id, created_at, status, mode, signature, attributes)"
        " select 'r' || i, ?::timestamptz - interval (4 - i) day, 'completed', 'validate', ?, ''"
        " from range(1, 4) t(i)",
        [NOW, options.signature],
    )
    con.register("deduped", deduped.filter(pl.col("disposition") == "submitted").to_arrow())
    con.execute(
        """
        create temp table sent as
        select
            case when hash(place_key) % 20 = 1 then 'was_' || place_key else place_key end
                as place_key,
            hash(place_key) % 20 = 1 as rekeyed,
            core_key, poi_name, region, postcode,
            ((row_number() over (order by row_ord)) - 1)::integer as n
        from deduped
        """
    )
    con.execute(
        f"""
        insert into run_places (run_id, place_key, chunk_no, position, request, core_key)
        select 'r1', place_key, n // {CHUNK}, n % {CHUNK},
            json_object(
                'id', place_key, 'poi_name', poi_name, 'postcode', postcode,
                'region', case when rekeyed then null else region end
            )::varchar,
            core_key
        from sent
        """
    )
    for run, day, share in (("r1", 3, 20), ("r2", 2, 100), ("r3", 1, 100)):
        con.execute(
            f"""
            insert into validations (run_id, place_key, chunk_no, position, success,
                existence_confidence, operational_status, error, error_code, validated_at,
                billable, loaded_at)
            select '{run}', place_key, n // {CHUNK}, n % {CHUNK}, hash(place_key) % 20 <> 0,
                0.9, 'open', case when hash(place_key) % 20 = 0 then 'upstream lookup failed' end,
                case when hash(place_key) % 20 = 0 then 'EXTERNAL_API_ERROR' end,
                ?::timestamptz - interval {day} day, true, ?::timestamptz - interval {day} day
            from sent
            where '{run}' = 'r1' or hash(place_key) % {share} = 0
            """,
            [NOW, NOW],
        )
    con.close()


def child(work: Path) -> dict[str, Any]:
    """Run the fresh stage once; what it cost and what it found."""
    from placeflow.options import RunOptions
    from placeflow.pipeline import fresh
    from placeflow.store.warehouse import connect

    options = RunOptions(mode="validate")
    con = connect(work / "wh.duckdb")
    staged = hasattr(fresh, "mark_fresh_staged")
    if staged:
        from placeflow.pipeline.staging import Staging
        from placeflow.state.records import DEDUPED, MARKED

        staging = Staging(con, warehouse=True)
        with staging.limited():
            parquet = str(work / "deduped.parquet")
            con.execute(f"create temp table {DEDUPED} as select * from read_parquet(?)", [parquet])
            with stage_cost() as cost:
                info = fresh.mark_fresh_staged(staging, options, now=NOW)
            rows = staging.count(MARKED)
    else:
        import polars as pl

        frame = pl.read_parquet(work / "deduped.parquet")
        with stage_cost() as cost:
            marked, info = fresh.mark_fresh(con, frame, options, now=NOW)
        rows = marked.height
    return {
        "implementation": "staged (SQL)" if staged else "frame (polars)",
        "rows": rows,
        **cost,
        "candidates": info.candidates,
        "fresh": info.fresh,
        "fresh_by_core": info.fresh_by_core,
        "held_failing": info.held_failing,
        "warnings": len(info.warnings),
    }


def measure(src: Path, work: Path) -> dict[str, Any]:
    env = os.environ | {"PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(work)],
        env=env, check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def section(results: list[dict[str, Any]], load: tuple[float, ...], command: str) -> str:
    head = "| implementation | rows | CPU s | wall s | RSS before MB | stage peak MB | maxrss MB |"
    lines = [
        "## Fresh stage in SQL (1M rows, rerun against a 1M-row earlier run)",
        "",
        f"`{command}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average"
        f" {' / '.join(f'{x:.2f}' for x in load)} (1/5/15 min), 2 cores shared.",
        "",
        head,
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['implementation']} | {r['rows']:,} | {r['cpu_s']} | {r['wall_s']} |"
            f" {r['rss_before_mb']} | {r['stage_peak_mb']} | {r['ru_maxrss_mb']} |"
            for r in results
        ),
        "",
        "Found (each): "
        + "; ".join(
            f"{r['implementation']}: {r['candidates']:,} candidates, {r['fresh']:,} fresh"
            f" ({r['fresh_by_core']:,} by core), {r['held_failing']:,} held,"
            f" {r['warnings']} warning(s)"
            for r in results
        ),
    ]
    return "\n".join(lines)


def _commit(folder: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return found.stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, default=Path("/tmp/pf/u1m.csv"))
    parser.add_argument("--work", type=Path, default=HERE / "work" / "fresh")
    parser.add_argument("--fixture-src", type=Path, default=ROOT / "src")
    parser.add_argument("--old-src", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return
    if args.build:
        build(args.build, args.csv)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if not (args.work / "wh.duckdb").exists():
        env = os.environ | {"PYTHONPATH": f"{args.fixture_src}{os.pathsep}{ROOT}"}
        subprocess.run(
            [sys.executable, __file__, "--build", str(args.work), "--csv", str(args.csv)],
            env=env, check=True, cwd=ROOT,
        )  # fmt: skip
    sources = [*([args.old_src] if args.old_src else []), ROOT / "src"]
    results = [measure(src, args.work) for src in sources]
    for r in results:
        print(json.dumps(r))
    if args.write:
        from bench.matching_report import replace_section

        old = " --old-src WORKTREE/src" if args.old_src else ""
        body = section(results, os.getloadavg(), f"python bench/fresh_bench.py{old}")
        if args.old_src:
            body += f"\n\nThe frame implementation: placeflow at {_commit(args.old_src)}."
        replace_section(HERE / "RESULTS.md", "fresh-sql", body)


if __name__ == "__main__":
    main()
