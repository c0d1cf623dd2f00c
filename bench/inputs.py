"""Benchmark inputs built from real place data: the sample restaurants and `airportsdata`.

The pool is every airport of the installed `airportsdata` package (if it is installed; read at
run time, never copied into the repository) plus the restaurants of data/samples. A unique input
of N rows cycles through the pool and makes copy c > 0 of a place unique by suffixing its name
(" 2", " 3", ...), so every row is a distinct place. The duplicates variant takes a unique input
of N * (1 - share) rows and adds N * share rows repeating earlier ones: half exact copies, half
formatting variants (upper case, doubled inner spaces, padding) that normalise to the same place.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from placeflow.pipeline.placekey import name_identity, street_identity, words

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
COLUMNS = ("id", "name", "address", "city", "state", "country", "lat", "lon")


@dataclass(frozen=True)
class Pool:
    frame: pl.DataFrame
    source: str


def load_pool() -> Pool:
    """The base places, one row per distinct place, and where they came from."""
    rows: list[dict[str, object]] = []
    sources = []
    try:
        import airportsdata  # type: ignore[import-untyped]  # optional, untyped

        airports = airportsdata.load()
        sources.append(
            f"airportsdata {getattr(airportsdata, '__version__', '?')} ({len(airports):,} airports)"
        )
        for _code, a in sorted(airports.items()):
            rows.append(
                {
                    "name": a["name"],
                    "address": "",
                    "city": a["city"],
                    "state": a["subd"],
                    "country": a["country"],
                    "lat": a["lat"],
                    "lon": a["lon"],
                }
            )
    except ImportError:
        sources.append("airportsdata not installed")
    n_samples = 0
    for path in sorted(SAMPLES.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                # The samples are US restaurants (see SOURCES.md); they have no country column.
                rows.append(
                    {
                        "name": r["name"],
                        "address": r["addr"],
                        "city": r["city"],
                        "state": "",
                        "country": "US",
                        "lat": None,
                        "lon": None,
                    }
                )
                n_samples += 1
    sources.append(f"data/samples ({n_samples:,} restaurants)")
    frame = pl.DataFrame(
        rows,
        schema={
            "name": pl.Utf8,
            "address": pl.Utf8,
            "city": pl.Utf8,
            "state": pl.Utf8,
            "country": pl.Utf8,
            "lat": pl.Float64,
            "lon": pl.Float64,
        },
    )
    # One row per place as the pipeline identifies places (its own name and street rules), so
    # that a "unique" input really has no duplicates (Fodor's and Zagat share restaurants).
    ident = pl.DataFrame(
        {
            "n": name_identity(frame["name"]),
            "a": street_identity(frame["address"].fill_null("")),
            "c": words(frame["city"].fill_null("")),
            "k": frame["country"],
            "la": frame["lat"].round(4),
            "lo": frame["lon"].round(4),
        }
    )
    first = ident.with_row_index("i").unique(subset=ident.columns, keep="first")["i"].sort()
    frame = frame.select(pl.all().gather(first))
    return Pool(frame, " + ".join(sources) + f"; {frame.height:,} distinct base places")


def unique_frame(pool: Pool, n: int, offset: int = 0) -> pl.DataFrame:
    """N distinct places: rows offset..offset+n of the pool cycled, copies suffixed."""
    base = pool.frame
    idx = pl.int_range(offset, offset + n, eager=True, dtype=pl.Int64)
    pos = idx % base.height
    copy = idx // base.height
    out = base.select(pl.all().gather(pos))
    name = (
        pl.when(copy == 0)
        .then(pl.col("name"))
        .otherwise(pl.col("name") + pl.lit(" ") + (copy + 1).cast(pl.Utf8))
    )
    return out.with_columns(name.alias("name"), ("r" + idx.cast(pl.Utf8)).alias("id")).select(
        COLUMNS
    )


def with_duplicates(pool: Pool, n: int, share: float, seed: int = 6) -> tuple[pl.DataFrame, int]:
    """N rows of which round(n * share) repeat earlier places; returns (frame, unique places)."""
    dups = round(n * share)
    uniq = n - dups
    base = unique_frame(pool, uniq)
    rng = random.Random(seed)
    picks = [rng.randrange(uniq) for _ in range(dups)]
    copies = base.select(pl.all().gather(picks))
    half = dups // 2
    exact = copies.head(half)
    variant = copies.tail(dups - half).with_columns(
        pl.col("name").str.to_uppercase().str.replace_all(" ", "  "),
        ("  " + pl.col("city").fill_null("") + " ").alias("city"),
    )
    # Every row keeps an id of its own; the duplicates are spread through the file.
    frame = pl.concat([base, exact, variant]).with_columns(
        ("r" + pl.int_range(pl.len(), dtype=pl.Int64).cast(pl.Utf8)).alias("id")
    )
    order = list(range(frame.height))
    rng.shuffle(order)
    return frame.select(pl.all().gather(order)), uniq


def write(frame: pl.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_csv(path)
    return path
