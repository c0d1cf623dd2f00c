"""Speed and memory of the fuzzy matching pass at 100k and 1M places.

Inputs: synthetic unique places built from real ones (airports of `airportsdata`: country, city,
region, coordinates moved up to ~20 km; names recombined from real airport and Fodor's words;
street lines from real Fodor's streets with random numbers; random ZIPs), plus 10% perturbed
duplicates (bench/matching_eval.py's perturbations). Each size is matched in a fresh child process
that reads the prepared parquet file and reports its own wall time and peak RSS.

    python3 -m uv run --frozen python bench/matching_bench.py [--rows 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "bench" / "work"


def build(rows: int, seed: int = 5) -> pl.DataFrame:
    from matching_eval import airport_bases, duplicate, restaurant_bases

    rng = random.Random(seed)
    airports = airport_bases(rng, 30_000)
    restaurants = restaurant_bases(rng)
    words = sorted({w for b in airports + restaurants for w in b["name"].split() if w.isalpha()})
    streets = [r["street"].partition(" ")[2] for r in restaurants if r["street"]]
    unique = int(rows / 1.1)
    out = []
    for i in range(unique):
        a = airports[rng.randrange(len(airports))]
        base = {
            "name": f"{rng.choice(words)} {rng.choice(words)}",
            "street": f"{rng.randrange(1, 9999)} {rng.choice(streets)}",
            "city": a["city"], "region": a["region"], "country": a["country"],
            "postcode": f"{rng.randrange(0, 99999):05d}",
            "latitude": max(-89.0, min(89.0, a["latitude"] + rng.uniform(-0.2, 0.2))),
            "longitude": a["longitude"] + rng.uniform(-0.2, 0.2),
            "phone": None, "kind": "restaurant",
        }  # fmt: skip
        out.append(base)
        if i < rows - unique:
            out.append(duplicate(rng, base))
    frame = pl.DataFrame(out[:rows], infer_schema_length=None).drop("phone", "kind")
    return frame.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))


def child(path: str) -> None:
    from matching_eval import _normalised

    from placeflow.pipeline.match import fuzzy_match

    records = pl.read_parquet(path).with_columns(pl.lit(None, pl.String).alias("phone"))
    t0 = time.perf_counter()
    places = _normalised(records, phone=False)
    unique = places.sort("row_ord").unique("place_key", keep="first", maintain_order=True)
    t1 = time.perf_counter()
    _matched, info = fuzzy_match(unique)
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": records.height, "prepare_s": t1 - t0, "match_s": t2 - t1,
                      "peak_rss_mb": rss, "candidates": info.candidate_pairs,
                      "merged": info.merged, "unique": unique.height}))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--child")
    p.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    args = p.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.rows:
        path = WORK / f"match_{n}.parquet"
        build(n).write_parquet(path)
        done = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True,
                              capture_output=True, text=True, env=dict(os.environ))  # fmt: skip
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(results[-1], flush=True)
    from matching_report import replace_section

    lines = ["# Fuzzy matching: speed and memory", "",
             f"- command: `python3 -m uv run --frozen python bench/matching_bench.py --rows "
             f"{' '.join(map(str, args.rows))}`; {os.cpu_count()} cores; each size in a fresh process",
             "- match s: `fuzzy_match` alone (features, Splink blocking and scoring, clustering);"
             " prepare s: normalise and exact place_key before it; peak RSS of the whole process", "",
             "| rows | unique keys | candidate pairs | merged | prepare s | match s | peak RSS MB |",
             "|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['unique']:,} | {r['candidates']:,} | {r['merged']:,} |"
                     f" {r['prepare_s']:.1f} | {r['match_s']:.1f} | {r['peak_rss_mb']:,.0f} |")  # fmt: skip
    lines += ["", "Targets: 1M rows under 3 minutes and under 2 GB peak RSS on 2 cores, near-linear"
              " from 100k."]  # fmt: skip
    replace_section(Path(args.out), "matching-bench", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
