"""Benchmark inputs built from real place data: the sample restaurants and `airportsdata`.

The pool is every airport of the installed `airportsdata` package (if it is installed; read at
run time, never copied into the repository) plus the restaurants of data/samples, kept where the
pipeline itself (its read, normalize and exact dedupe) accepts a place and keeps it apart from
every other: one row per place_key, no row it rejects. A unique input
of N rows cycles through the pool and makes copy c > 0 of a place unique by suffixing its name
(" 2", " 3", ...), so every row is a distinct place. The duplicates variant takes a unique input
of N * (1 - share) rows and adds N * share rows repeating earlier ones: half exact copies, half
formatting variants (upper case, doubled inner spaces, padding) that normalise to the same place.
"""

from __future__ import annotations

import csv
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

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
    kept = _as_the_pipeline_sees(frame)
    dropped = frame.height - kept.height
    return Pool(
        kept,
        " + ".join(sources) + f"; {kept.height:,} distinct base places ({dropped:,} left out: "
        "rejected by the pipeline, or the same place as another once normalised and repaired)",
    )


def _as_the_pipeline_sees(frame: pl.DataFrame) -> pl.DataFrame:
    """The base places the pipeline accepts, one per place_key: the pool run through the
    pipeline's own read, normalize (with its coordinate repair) and exact dedupe, so that a
    "unique" input is rows the pipeline sends every one of (Fodor's and Zagat share
    restaurants; a few airports are in a country code that is not ISO 3166, or share a name
    and city and lose their coordinates to the repair)."""
    from placeflow.options import RunOptions
    from placeflow.pipeline.dedupe import dedupe
    from placeflow.pipeline.normalize import normalize
    from placeflow.pipeline.source import FileSource, read

    with tempfile.TemporaryDirectory(prefix="pool_") as tmp:
        path = Path(tmp) / "pool.csv"
        frame.with_row_index("id").select(COLUMNS).write_csv(path)
        rows, _ = read(FileSource((str(path),)), RunOptions(dedupe="exact"))
        places, _, _ = normalize(rows)
        keyed, _ = dedupe(places, mode="exact")
    sent = keyed.filter(pl.col("disposition") == "submitted")["row_ord"].sort()
    return frame.select(pl.all().gather(sent))


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


def write_unique(pool: Pool, n: int, path: Path, *, step: int = 500_000) -> Path:
    """`unique_frame(pool, n)` written as one CSV a `step` of rows at a time: at most `step`
    rows are ever in memory (columnar, never Python objects), whatever n is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for offset in range(0, n, step):
            part = unique_frame(pool, min(step, n - offset), offset=offset)
            part.write_csv(f, include_header=offset == 0)
    return path
