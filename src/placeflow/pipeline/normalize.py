"""Normalise and check stage: tidy the read text, then split rows into sendable places and rejects.

Text is trimmed and every run of whitespace (newlines included) folded to one space; nothing else
about it changes (injection-looking strings are data and stay verbatim). A whole value that is a
placeholder ("N/A", "null", "-", ..., and a dump's `\\N`; see PLACEHOLDERS) becomes null.
Countries become ISO alpha-2 (see `countries`); unknown ones are rejected, never guessed.
Coordinates must be finite numbers in range (a decimal comma, 48,8566, reads as 48.8566); one
given without the other drops both, and `note` says which was given. Lost ZIP zeros are restored
and coordinates that cannot be in the row's country repaired or dropped (see `repair`), each
noted. Control characters and bidi
overrides are removed (noted); a NUL byte rejects its row. Every limit of the spec's
POIValidateRequest (the stricter request model) is checked, so a row the service would refuse is
never sent. A row with several problems gets one reject naming them all,
joined by "; ", with `field` the first offending field ("row" for a record that could not be read
cleanly: its reason is the read error alone). Every input row lands in exactly one of the two
outputs. Problems are found with cheap whole-column tests; reasons are worded only for the rejected
rows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import polars as pl

from placeflow.fields import MATCH_ONLY_FIELDS, PLACE_FIELDS
from placeflow.pipeline.columnar import apply, parallel, patched, per_value
from placeflow.pipeline.countries import country_lookup, to_alpha2
from placeflow.pipeline.repair import repair

LIMITS: dict[str, int] = {
    "poi_name": 200,
    "street": 300,
    "address": 500,
    "city": 200,
    "region": 200,
    "postcode": 40,
}
PLACEHOLDERS = ("", "n/a", "na", "#n/a", "null", "none", "not available", "-", "--", "?", "unknown")
"""Whole values (any case) that mean "no value". In `country`, 'NA' is Namibia, not a gap."""
NULL_MARKERS = ("\\N",)
r"""Whole values, exactly as written, that mean "no value": `\N`, how MySQL and PostgreSQL
dumps write NULL (and the files exported from them, such as the UK's Open Pubs)."""
RANGES = {"latitude": (-90.0, 90.0), "longitude": (-180.0, 180.0)}
DECIMAL_COMMA = r"^[+-]?\d+,\d+$"
"""A coordinate written with a decimal comma, as spreadsheets in many locales write it."""
TEXT_FIELDS = ("poi_name", "street", "address", "city", "region", "postcode", "country")
REPETITIVE = frozenset({"city", "region", "country"})
"""Fields with few distinct values, cleaned once per value."""
KEYS = ("row_ord", "source_file", "source_row", "source_id")
QUOTE_AT_MOST = 60
"""Values quoted in a reason are cut to this many characters (a field can be megabytes)."""
WHITESPACE_RUN = r"\s{2,}|[^\S ]"
"""Whitespace that is not already a single plain space."""
HIDDEN = r"[\x01-\x08\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
"""Control characters (ESC and the like) and bidi overrides/isolates: invisible, they can make a
value read differently on screen than it is; removed, and the row's note says so."""
NUL = "\x00"
"""A NUL byte: a sign of a binary or broken file. The row is rejected, never sent."""


def _whole(words: tuple[str, ...]) -> str:
    """A whole value that is one of `words` (any case) or of NULL_MARKERS (as written)."""
    loose = "|".join(re.escape(w) for w in words)
    exact = "|".join(re.escape(w) for w in NULL_MARKERS)
    return f"^(?:(?i:{loose})|{exact})$"


_PLACEHOLDER = _whole(PLACEHOLDERS)
_COUNTRY_PLACEHOLDER = _whole(tuple(p for p in PLACEHOLDERS if p != "na"))


@dataclass(frozen=True)
class NormalizeInfo:
    """Counts of the stage: every one of `rows` is either kept or rejected."""

    rows: int
    kept: int
    rejected: int
    coordinates_nulled: int
    countries_mapped: int
    rejected_by_field: dict[str, int] = field(default_factory=dict)
    postcodes_restored: int = 0
    coordinates_repaired: int = 0
    coordinates_dropped: int = 0


def merged(infos: Sequence[NormalizeInfo]) -> NormalizeInfo:
    """The summary of the stage run a batch at a time: its batches' counts summed."""
    by_field: Counter[str] = Counter()
    for info in infos:
        by_field.update(info.rejected_by_field)
    sums = {
        f.name: sum(getattr(i, f.name) for i in infos)
        for f in fields(NormalizeInfo)
        if f.name != "rejected_by_field"
    }
    return NormalizeInfo(**sums, rejected_by_field=dict(sorted(by_field.items())))


def tidy(values: pl.Series) -> pl.Series:
    """Remove hidden characters (HIDDEN), trim, and fold every run of whitespace to one space."""
    hidden = values.str.contains(HIDDEN)
    visible = patched(values, hidden, lambda e: e.str.replace_all(HIDDEN, ""))
    run = visible.str.contains(WHITESPACE_RUN)
    folded = patched(visible, run, lambda e: e.str.replace_all(WHITESPACE_RUN, " "))
    return folded.str.strip_chars(" ")


def drop_placeholders(values: pl.Series, *, country: bool = False) -> pl.Series:
    """Null for a whole value that only stands for "no value"."""
    pattern = _COUNTRY_PLACEHOLDER if country else _PLACEHOLDER
    return values.set(values.str.contains(pattern).fill_null(False), None)


def _coerce(rows: pl.DataFrame) -> pl.DataFrame:
    """The read frame as text (a normalised frame is accepted too, hence idempotence)."""
    present = set(rows.columns)

    def text(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.String) if name in present else pl.lit(None, pl.String)

    ordinal = pl.col("row_ord") if "row_ord" in present else pl.int_range(pl.len())
    return rows.select(
        ordinal.cast(pl.Int64).alias("row_ord"),
        text("source_file").alias("source_file"),
        (pl.col("source_row") if "source_row" in present else ordinal + 1)
        .cast(pl.Int64)
        .alias("source_row"),
        *[
            text(c).alias(c)
            for c in ("source_id", *PLACE_FIELDS, *MATCH_ONLY_FIELDS, "read_error", "note")
        ],
    )


def _clean_field(name: str, values: pl.Series) -> list[pl.Series]:
    """`_<name>`, and `_given_<name>` (tidied, placeholders kept) where reasons quote it, and
    `_alpha2` or `_<name>_number` for the country and the coordinates."""
    country = name == "country"

    def clean_text(v: pl.Series) -> pl.Series:
        return drop_placeholders(tidy(v), country=country)

    out: list[pl.Series] = [values.str.contains(HIDDEN).fill_null(False).rename(f"_hidden_{name}")]
    if name in RANGES:  # inner spaces make no number valid: trimming is enough
        clean = drop_placeholders(values.str.strip_chars())
        # "48,8566" (a spreadsheet's decimal comma) can only mean 48.8566 for a coordinate
        comma = clean.str.contains(DECIMAL_COMMA).fill_null(False)
        number = patched(clean, comma, lambda e: e.str.replace(",", ".", literal=True))
        out.append(number.cast(pl.Float64, strict=False).rename(f"_{name}_number"))
    else:
        clean = per_value(values, clean_text) if name in REPETITIVE else clean_text(values)
    out.append(clean.rename(f"_{name}"))
    if name in ("poi_name", "country"):
        given = per_value(values, tidy) if name in REPETITIVE else tidy(values)
        out.append(given.rename(f"_given_{name}"))
    if country:
        out.append(per_value(clean, lambda v: apply(v, to_alpha2)).rename("_alpha2"))
    return out


def _clean(raw: pl.DataFrame) -> pl.DataFrame:
    """The raw frame with every field's cleaned columns (see `_clean_field`) beside it."""
    country_lookup()  # build once, before the threads want it

    def task(name: str) -> Callable[[], list[pl.Series]]:
        return lambda: _clean_field(name, raw.get_column(name))

    done = parallel({name: task(name) for name in PLACE_FIELDS}, rows=raw.height)
    only = [drop_placeholders(tidy(raw.get_column(f))).alias(f"_{f}") for f in MATCH_ONLY_FIELDS]
    return raw.with_columns([s for columns in done.values() for s in columns] + only)


def _problems() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(field, is-a-problem, reason) in the order reasons are listed."""

    def col(name: str) -> pl.Expr:
        return pl.col(name)

    def quoted(text: pl.Expr) -> pl.Expr:
        more = pl.when(text.str.len_chars() > QUOTE_AT_MOST).then(pl.lit("…")).otherwise(pl.lit(""))
        return pl.concat_str(pl.lit("'"), text.str.slice(0, QUOTE_AT_MOST), more, pl.lit("'"))

    given_name = col("_given_poi_name")
    missing = (
        pl.when(given_name.is_null() | (given_name == ""))
        .then(pl.lit("poi_name is missing"))
        .otherwise(pl.format("poi_name is missing ({} is a placeholder)", quoted(given_name)))
    )
    found = [("poi_name", col("_poi_name").is_null(), missing)]
    for name in TEXT_FIELDS:
        found.append(
            (
                name,
                col(f"_{name}").str.contains(NUL, literal=True),
                pl.lit(f"{name} contains a NUL byte"),
            )
        )
    for name in TEXT_FIELDS:
        if name in LIMITS:
            length = col(f"_{name}").str.len_chars()
            limit = LIMITS[name]
            words = f"{name} is {{}} characters; the service accepts at most {limit}"
            reason = pl.format(words, length)
            found.append((name, length > limit, reason))
    unknown = col("_country").is_not_null() & col("_alpha2").is_null()
    reason = pl.format(
        "country {} is not an ISO 3166 country; use a 2-letter code such as US",
        quoted(col("_given_country")),
    )
    found.append(("country", unknown, reason))
    for name, (low, high) in RANGES.items():
        text, number = col(f"_{name}"), col(f"_{name}_number")
        not_number = text.is_not_null() & number.is_null()
        not_finite = number.is_nan() | number.is_infinite()
        outside = (number < low) | (number > high)
        reason = (
            pl.when(not_number).then(pl.format(f"{name} {{}} is not a number", quoted(text)))
            .when(not_finite).then(pl.format(f"{name} {{}} is not a finite number", quoted(text)))
            .otherwise(pl.format(f"{name} {{}} is outside {low:g}..{high:g}", quoted(text)))
        )  # fmt: skip
        found.append((name, not_number | not_finite | outside, reason))
    return [(name, test.fill_null(False), reason) for name, test, reason in found]


def _rejects(bad: pl.DataFrame, problems: list[tuple[str, pl.Expr, pl.Expr]]) -> pl.DataFrame:
    reasons = [pl.when(test).then(reason) for _, test, reason in problems]
    fields = [pl.when(test).then(pl.lit(name)) for name, test, _ in problems]
    read_error = pl.col("read_error")
    raw = pl.struct(pl.col("source_id").alias("id"), *PLACE_FIELDS).struct.json_encode()
    return bad.select(
        *KEYS,
        pl.when(read_error.is_not_null()).then(pl.lit("row"))
        .otherwise(pl.coalesce(fields)).alias("field"),
        pl.when(read_error.is_not_null()).then(read_error)
        .otherwise(pl.concat_str(reasons, separator="; ", ignore_nulls=True)).alias("reason"),
        raw.alias("raw"),
    )  # fmt: skip


def normalize(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, NormalizeInfo]:
    """Split the read frame into (places, rejects, summary); see the module docstring."""
    work = _clean(_coerce(rows))
    problems = _problems()
    bad = pl.col("read_error").is_not_null() | pl.any_horizontal([t for _, t, _ in problems])
    work = work.with_columns(bad.alias("_bad"))
    cleaned = [c for c in work.columns if c.startswith("_")]
    kept = work.select(*KEYS, "note", *cleaned).filter(~pl.col("_bad"))
    rejects = _rejects(work.filter(pl.col("_bad")), problems)  # few rows: all columns kept
    del work  # the wide working frame (raw and cleaned columns) is let go before the repair
    has_lat, has_lon = (pl.col(f"_{c}_number").is_not_null() for c in RANGES)
    hidden = pl.any_horizontal(pl.col("^_hidden_.*$"))
    half: pl.Expr = (
        pl.when(has_lat & ~has_lon).then(pl.lit("latitude given without longitude; both dropped"))
        .when(has_lon & ~has_lat).then(pl.lit("longitude given without latitude; both dropped"))
    )  # fmt: skip
    removed = pl.lit("control or bidi-override characters removed")
    note = (
        pl.when(hidden)
        .then(pl.concat_str(removed, pl.concat_str(pl.lit("; "), half), ignore_nulls=True))
        .otherwise(half)
    )
    places = kept.select(
        *KEYS,
        *[pl.col(f"_{f}").alias(f) for f in TEXT_FIELDS if f != "country"],
        pl.col("_alpha2").alias("country"),
        *[pl.when(has_lat & has_lon).then(pl.col(f"_{c}_number")).alias(c) for c in RANGES],
        *[pl.col(f"_{f}").alias(f) for f in MATCH_ONLY_FIELDS],
        pl.coalesce(note, pl.col("note")).alias("note"),
        half.is_not_null().alias("_nulled"),
        (pl.col("_alpha2") != pl.col("_country")).fill_null(False).alias("_mapped"),
    )
    places, fixes = repair(places)  # lost ZIP zeros, coordinates outside the row's country
    counts = places.select(pl.col("_nulled").sum(), pl.col("_mapped").sum())
    info = NormalizeInfo(
        rows=rows.height,
        kept=places.height,
        rejected=rejects.height,
        coordinates_nulled=int(counts.item(0, 0)),
        countries_mapped=int(counts.item(0, 1)),
        rejected_by_field=dict(rejects.group_by("field").len().sort("field").iter_rows()),
        postcodes_restored=fixes.postcodes_restored,
        coordinates_repaired=fixes.coordinates_repaired,
        coordinates_dropped=fixes.coordinates_dropped,
    )
    return places.select(*KEYS, *PLACE_FIELDS, *MATCH_ONLY_FIELDS, "note"), rejects, info
