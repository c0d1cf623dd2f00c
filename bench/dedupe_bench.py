"""The dedupe stage at a million rows (and, staged, at ten million): CPU seconds and peak RSS.

Each measurement runs in a child process of its own and reports its CPU seconds and the peak
RSS of the stage (VmHWM reset as the stage starts) and of the process (ru_maxrss):

- frame: `dedupe(places)` on the normalised places of the input, as tests, the research
  command and bench/inputs.py call it (keys included);
- staged: `dedupe_staged` on PLACES (the keyed places, staged by DuckDB from a parquet file,
  as the streamed prepare leaves them a batch at a time), its memory capped by
  `Staging.limited()`; at 1M rows and at 10M (the 1M rows ten times, each copy under keys of
  its own, so the places are as unique as the input's).

    python bench/dedupe_bench.py [--old-src PATH] [--write]

--old-src: the src/ folder of a placeflow whose dedupe is the polars frame implementation
(e.g. `git archive 47c32fd^ src | tar -x -C DIR`), its frame dedupe measured beside this
tree's. --write puts the figures in bench/RESULTS.md (section dedupe-sql).
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
COPIES = 10


def build(work: Path, csv: Path) -> None:
    """places.parquet (read + normalize of `csv`) and keyed.parquet (its keyed places)."""
    from placeflow.pipeline.dedupe import keyed
    from placeflow.pipeline.normalize import normalize
    from placeflow.pipeline.read import read_inputs

    rows, _ = read_inputs([str(csv)])
    places, _, _ = normalize(rows)
    del rows
    places.write_parquet(work / "places.parquet")
    keyed(places).write_parquet(work / "keyed.parquet")


def copies(work: Path) -> None:
    """keyed10.parquet: keyed.parquet COPIES times, each copy's row_ord shifted, keys anew."""
    import duckdb

    with duckdb.connect() as con:
        con.execute(
            f"""
            copy (
                select * replace (
                    row_ord + c * (select max(row_ord) + 1 from read_parquet($one)) as row_ord,
                    case when c = 0 then place_key
                        else 'pk_' || left(md5(place_key || c), 24) end as place_key,
                    case when c = 0 then core_key
                        else 'ck_' || left(md5(core_key || c), 24) end as core_key
                )
                from read_parquet($one), range({COPIES}) copies(c)
            ) to '{work / "keyed10.parquet"}' (format parquet)
            """,
            {"one": str(work / "keyed.parquet")},
        )


def child(work: Path, kind: str) -> dict[str, Any]:
    """Run the dedupe stage once (`kind`: frame, staged or staged10); what it cost and found."""
    from placeflow.pipeline import dedupe as stage

    if kind == "frame":
        import polars as pl

        frame = pl.read_parquet(work / "places.parquet")
        with stage_cost() as cost:
            out, info = stage.dedupe(frame)
        rows = out.height
        staged = hasattr(stage, "dedupe_staged")
        implementation = "frame: staged SQL" if staged else "frame: polars"
    else:
        from placeflow.pipeline.staging import Staging
        from placeflow.state.records import DEDUPED, PLACES

        parquet = work / ("keyed.parquet" if kind == "staged" else "keyed10.parquet")
        with Staging.scratch() as staging, staging.limited():
            staging.con.execute(
                f"create temp table {PLACES} as select * from read_parquet(?)", [str(parquet)]
            )
            with stage_cost() as cost:
                info = stage.dedupe_staged(staging)
            rows = staging.count(DEDUPED)
        implementation = "dedupe_staged (PLACES in DuckDB)"
    return {
        "implementation": implementation,
        "rows": rows,
        **cost,
        "unique": info.unique,
        "duplicates": info.duplicates,
    }


def measure(src: Path, work: Path, kind: str) -> dict[str, Any]:
    env = os.environ | {"PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(work), "--kind", kind],
        env=env, check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def section(results: list[dict[str, Any]], load: tuple[float, ...], command: str) -> str:
    head = (
        "| implementation | rows | CPU s | wall s | RSS before MB | stage peak MB | maxrss MB"
        " | unique | duplicates |"
    )
    lines = [
        "## Dedupe stage in SQL (1M rows; staged also at 10M)",
        "",
        f"`{command}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average"
        f" {' / '.join(f'{x:.2f}' for x in load)} (1/5/15 min), 2 cores shared. Each row a"
        " child process; stage peak = VmHWM reset as the stage starts.",
        "",
        head,
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['implementation']} | {r['rows']:,} | {r['cpu_s']} | {r['wall_s']} |"
            f" {r['rss_before_mb']} | {r['stage_peak_mb']} | {r['ru_maxrss_mb']} |"
            f" {r['unique']:,} | {r['duplicates']:,} |"
            for r in results
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="frame", help=argparse.SUPPRESS)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--csv", type=Path, default=Path("/tmp/pf/u1m.csv"))
    parser.add_argument("--work", type=Path, default=HERE / "work" / "dedupe")
    parser.add_argument("--old-src", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.kind)))
        return
    if args.build:
        if not (args.build / "keyed.parquet").exists():
            build(args.build, args.csv)
        copies(args.build)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if not (args.work / "keyed10.parquet").exists():  # in a child: this process stays small
        env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        subprocess.run(
            [sys.executable, __file__, "--build", str(args.work), "--csv", str(args.csv)],
            env=env, check=True, cwd=ROOT,
        )  # fmt: skip
    src = ROOT / "src"
    runs = [
        *([(args.old_src, "frame")] if args.old_src else []),
        (src, "frame"),
        (src, "staged"),
        (src, "staged10"),
    ]
    results = []
    for folder, kind in runs:
        results.append(measure(folder, args.work, kind))
        print(json.dumps(results[-1]), flush=True)
    if args.write:
        from bench.matching_report import replace_section

        old = " --old-src OLD/src" if args.old_src else ""
        body = section(results, os.getloadavg(), f"python bench/dedupe_bench.py{old}")
        if args.old_src:
            body += f"\n\nframe: polars is placeflow's dedupe before {_head()}."
        replace_section(HERE / "RESULTS.md", "dedupe-sql", body)


def _head() -> str:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h", "--", "sql/prepare/dedupe_rows.sql"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return found.stdout.strip()


if __name__ == "__main__":
    main()
