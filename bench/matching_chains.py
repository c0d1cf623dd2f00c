"""False merges of the fuzzy dedupe on real directories, as users' files come (#44 item 8).

Each directory (the seven labelled ones, bench/matching/directories/labelled.csv.gz, and the
chain directories of chains.csv.gz beside it: SOURCES.md) is run as one input file through
placeflow's normalise and dedupe (`placeflow.pipeline.dedupe.dedupe`, fuzzy, the default
threshold: bench/matching_real.py's `run_dedupe`) three ways: with the directory's own ids as
the file's id column; without ids; without ids and without phones. Merged: the pairs of rows
dedupe puts in one place; false: those pairs whose rows are two places by the directory's ids;
allowed: max(2, 1% of the merged), the issue's bound. A run over its bound is marked "OVER".
"of them on ambiguous rows": false pairs with a row the labelled set flags `ambiguous` (a
different place of a like name within 50 m, such as a bus stop's two directions: SOURCES.md).

    .venv/bin/python bench/matching_chains.py [--source NAME ...] [--show N]
"""

from __future__ import annotations

import argparse
import gzip
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # placeflow, not installed
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench/ siblings

import matching_real  # bench/ sibling, path set above

ROOT = Path(__file__).resolve().parent.parent
CHAINS = ROOT / "bench" / "matching" / "directories" / "chains.csv.gz"
WAYS = (("read", True, True), ("none", False, True), ("none, no phones", False, False))
"""(label, ids read, phones read)."""


def records() -> pl.DataFrame:
    """The labelled directories and the chain directories, every column a string."""
    frames = []
    for path in (matching_real.DIRECTORIES, CHAINS):
        with gzip.open(path, "rb") as f:
            frames.append(pl.read_csv(f.read(), infer_schema_length=0))
    return pl.concat(frames, how="diagonal_relaxed")


def run(part: pl.DataFrame, *, ids: bool, phones: bool) -> dict[str, Any]:
    """One directory, one way: merged pairs, false pairs (and the rows of each false pair)."""
    source = part.get_column("source")[0]
    given = part if phones else part.with_columns(pl.lit(None, pl.String).alias("phone"))
    rows = matching_real.as_rows(
        given, file=pl.lit(source), ids=pl.col("source_id") if ids else None
    )
    grouped = matching_real.run_dedupe(rows)
    labelled = part.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))
    labelled = labelled.join(grouped, on="row_ord")
    merged = false = ambiguous = 0
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for members in labelled.group_by("group").agg(pl.struct(pl.all())).get_column("row_ord"):
        people = members.to_list()
        for a, b in combinations(people, 2):
            merged += 1
            if a["entity_id"] != b["entity_id"]:
                false += 1
                ambiguous += "true" in (a["ambiguous"], b["ambiguous"])
                shown.append((a, b))
    return {"source": source, "rows": part.height, "merged": merged, "false": false,
            "ambiguous": ambiguous, "allowed": max(2.0, merged / 100), "pairs": shown}  # fmt: skip


def _row(x: dict[str, Any]) -> str:
    """A row as the false pairs are printed: name / street / postcode (coordinates)."""
    where = f"({x['latitude']}, {x['longitude']})"
    return f"{x['name']!r} / {x['street']!r} / {x['postcode']!r} {where}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source", action="append", help="only these directories")
    p.add_argument("--show", type=int, default=5, help="false pairs printed a run")
    args = p.parse_args(argv)
    everything = records()
    sources = args.source or sorted(everything.get_column("source").unique())
    print("| directory | rows | ids | merged | false | of them on ambiguous rows | allowed |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for source in sources:
        part = everything.filter(pl.col("source") == source)
        for label, ids, phones in WAYS:
            r = run(part, ids=ids, phones=phones)
            over = " OVER" if r["false"] > r["allowed"] else ""
            print(f"| {source} | {r['rows']:,} | {label} | {r['merged']:,} | {r['false']}{over}"
                  f" | {r['ambiguous']} | {r['allowed']:.1f} |", flush=True)  # fmt: skip
            for a, b in r["pairs"][: args.show]:
                print("    false:", *map(_row, (a, b)), sep="\n      ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
