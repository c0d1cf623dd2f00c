"""Dedupe scored on real directories and on the two restaurant guides (labels not ours).

Directories (bench/matching/directories/labelled.csv.gz, SOURCES.md): seven public directories
that carry their own ids (bank branches, rail and transit stations, IKEA stores); a record's
`entity_id` says which records are one place. Each source is run as one input file through
placeflow's own normalise and dedupe (`placeflow.pipeline.dedupe.dedupe`: the exact key, then
the fuzzy pass, every evidence rule), twice: with the source's ids as the file's id column (as a
directory is read by default) and without them (a file that has no ids, or
`--ids-may-repeat-places`). All seven are also run together, one file per source, for the pairs
across sources. Precision and recall are over pairs of records, counted with and without the
rows the set flags `ambiguous` (a different place of a similar name within 50 m, ...).

Guides (data/samples: Fodor's and Zagat, bench/matching/guides/matches_fodors_zagat.csv: the 112
pairs that are one restaurant): both files in one run, ids mapped; every other pair is two
restaurants.
"""

from __future__ import annotations

import gzip
import time
from pathlib import Path
from typing import Any

import polars as pl

from placeflow.fields import DedupeMode
from placeflow.pipeline.dedupe import dedupe
from placeflow.pipeline.normalize import normalize

ROOT = Path(__file__).resolve().parent.parent
DIRECTORIES = ROOT / "bench" / "matching" / "directories" / "labelled.csv.gz"
GUIDES = ROOT / "data" / "samples"
GUIDE_MATCHES = ROOT / "bench" / "matching" / "guides" / "matches_fodors_zagat.csv"
FIELDS = ("poi_name", "street", "address", "city", "region", "postcode", "country",
          "latitude", "longitude", "phone", "website")  # fmt: skip


def directories() -> pl.DataFrame:
    """The labelled records, every column a string but `perturbed` and `ambiguous`."""
    with gzip.open(DIRECTORIES, "rb") as f:
        frame = pl.read_csv(f.read(), infer_schema_length=0)
    return frame.with_columns(pl.col("perturbed", "ambiguous") == "true")


def as_rows(records: pl.DataFrame, *, file: pl.Expr, ids: pl.Expr | None) -> pl.DataFrame:
    """The records as a run reads them (row_ord, source_file, source_row, source_id, fields)."""
    given = {c: pl.col(c) for c in records.columns}
    pick = {"poi_name": given.get("name", given.get("poi_name"))}
    for f in FIELDS[1:]:
        pick[f] = given.get(f, pl.lit(None))
    return records.with_row_index("row_ord").select(
        pl.col("row_ord").cast(pl.Int64),
        file.alias("source_file"),
        (pl.col("row_ord") + 1).cast(pl.Int64).alias("source_row"),
        (ids if ids is not None else pl.lit(None)).cast(pl.String).alias("source_id"),
        *[e.cast(pl.String).alias(f) for f, e in pick.items()],
    )


def run_dedupe(rows: pl.DataFrame, mode: DedupeMode = "fuzzy", **kw: Any) -> pl.DataFrame:
    """Each row's answering place (`group`) after normalise and dedupe, by row_ord."""
    places, _rejects, _info = normalize(rows)
    deduped, _ = dedupe(places, mode=mode, **kw)
    return deduped.select("row_ord", pl.col("place_key").alias("group"))


def _pairs(frame: pl.DataFrame, *by: str) -> int:
    """Pairs of rows sharing every column of `by` (null never shares)."""
    sizes = frame.drop_nulls(list(by)).group_by(*by).len().get_column("len")
    return int((sizes * (sizes - 1) // 2).sum())


def pair_scores(labelled: pl.DataFrame, *, across: str | None = None) -> dict[str, Any]:
    """Precision and recall over pairs of `labelled` (entity, group; `across`: only pairs whose
    two rows differ in that column count)."""

    def count(*by: str) -> int:
        n = _pairs(labelled, *by)
        return n - _pairs(labelled, *by, across) if across else n

    predicted, true, hit = count("group"), count("entity"), count("group", "entity")
    return {
        "predicted": predicted,
        "true": true,
        "correct": hit,
        "precision": hit / predicted if predicted else 1.0,
        "recall": hit / true if true else 1.0,
    }


def evaluate_directories(mode: DedupeMode = "fuzzy", **kw: Any) -> list[dict[str, Any]]:
    """Per source (one file each), with and without ids, with and without ambiguous rows;
    then all sources in one run (pairs across sources)."""
    records = directories()
    out: list[dict[str, Any]] = []
    for ids in (True, False):
        for source in sorted(records.get_column("source").unique()):
            part = records.filter(pl.col("source") == source)
            t0 = time.perf_counter()
            grouped = run_dedupe(
                as_rows(part, file=pl.lit(source), ids=pl.col("source_id") if ids else None),
                mode,
                **kw,
            )
            seconds = time.perf_counter() - t0
            labelled = part.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))
            labelled = labelled.join(grouped, on="row_ord").rename({"entity_id": "entity"})
            for ambiguous in (True, False):
                kept = labelled if ambiguous else labelled.filter(~pl.col("ambiguous"))
                out.append({"source": source, "ids": ids, "ambiguous": ambiguous,
                            "rows": kept.height, "seconds": seconds,
                            **pair_scores(kept)})  # fmt: skip
        whole = run_dedupe(
            as_rows(records, file=pl.col("source"), ids=pl.col("source_id") if ids else None),
            mode,
            **kw,
        )
        labelled = records.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))
        labelled = labelled.join(whole, on="row_ord").rename({"entity_id": "entity"})
        for ambiguous in (True, False):
            kept = labelled if ambiguous else labelled.filter(~pl.col("ambiguous"))
            out.append({"source": "across sources (all 7 in one run)", "ids": ids,
                        "ambiguous": ambiguous, "rows": kept.height, "seconds": 0.0,
                        **pair_scores(kept, across="source")})  # fmt: skip
    return out


def guides() -> pl.DataFrame:
    """Both guides as one frame: guide, id, name, addr, city, phone, entity (the Fodor's id of
    the pair a row is in, else the guide and its own id)."""
    frames = []
    for guide in ("fodors", "zagat"):
        g = pl.read_csv(GUIDES / f"restaurants_{guide}.csv", infer_schema_length=0)
        frames.append(g.with_columns(pl.lit(guide).alias("guide")))
    rows = pl.concat(frames)
    pairs = pl.read_csv(GUIDE_MATCHES, infer_schema_length=0)
    zagat = dict(zip(pairs["zagats_id"], pairs["fodors_id"], strict=True))
    entity = (
        pl.when(pl.col("guide") == "fodors").then(pl.lit("f") + pl.col("id"))
        .otherwise(pl.lit("f") + pl.col("id").replace_strict(zagat, default=None))
    )  # fmt: skip
    return rows.with_columns(
        pl.coalesce(entity, pl.lit("z") + pl.col("id")).alias("entity"),
        pl.col("addr").alias("street"),
    )


def evaluate_guides(mode: DedupeMode = "fuzzy", **kw: Any) -> dict[str, Any]:
    """Both guides in one run (a file each, ids mapped, phone read): pairs across the guides."""
    rows = guides()
    grouped = run_dedupe(as_rows(rows, file=pl.col("guide") + ".csv", ids=pl.col("id")), mode, **kw)
    labelled = rows.with_row_index("row_ord").with_columns(pl.col("row_ord").cast(pl.Int64))
    labelled = labelled.join(grouped, on="row_ord")
    places = labelled.get_column("group").n_unique()
    return {"rows": rows.height, "places": places, **pair_scores(labelled, across="guide")}


if __name__ == "__main__":
    for r in evaluate_directories():
        print(r)
    print(evaluate_guides())
