"""Comparison features of the fuzzy matching pass, computed column-wise with polars.

From the normalised place fields (and `phone`, `website` when the frame has them):

- name_core: the place_key name identity of the name with accents stripped (café = cafe), street
  words spelled out (st = street), and branch suffixes dropped: a parenthesised part, anything
  after " - " / an en dash / " @ ", "#12", "store 12", "no. 12". name_sorted: its distinct words
  sorted (word order ignored); name_tokens: those words as a list; name_token: the first word.
- street_number: the first house number (digits with at most one letter) of the street line
  (`street`, else `address`) once suite clauses ("suite 200", "#200", "unit 3b") are removed;
  street_name: the rest of the line, abbreviations spelled out, without number or suite.
- postcode: upper case without spaces; a US ZIP+4 cut to 5 digits and a ZIP that lost its
  leading zeros (3-4 digits, country US or unknown) padded back to 5.
- city: words, accents stripped. country: as given (alpha-2). latitude, longitude: as given.
- phone: its digits, the last 10 (null when fewer than 7). website: the host, without www.
  Either is nulled where more than MAX_SHARED places hold it (a chain's or a platform's), and
  so are the coordinates where places of more than MAX_SHARED names stand on the very same
  spot (a town's, a postcode's or a map's centre that a directory gave its places:
  SHARED_SPOT).
- block keys (`b_*`): the blocking columns (64-bit hashes of their parts); a key shared by more
  than MAX_BLOCK places is nulled, so every blocking rule yields at most MAX_BLOCK - 1 candidates
  per place (pairs stay linear). Every feature but that cap is the row's own: the pass computes
  them batch by batch (`capped=False`) and caps the blocks over all its places in DuckDB
  (`capped_blocks_sql`).
"""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.columnar import apply, parallel, patched, per_value
from placeflow.pipeline.match.evidence import marks, phone_key, street_parts
from placeflow.pipeline.placekey import STREET_WORDS, name_identity, words

MAX_BLOCK = 40
"""Largest block a blocking key may form; bigger blocks (a chain in one city) are left to the
other rules (postcode + number, phone, nearby cell), which tell its branches apart."""
MAX_SHARED = 2
"""Most places a phone number or web host may belong to and still count: one held by more is a
chain's (its head office, its brand's site) or a platform's, which says nothing of whether two
listings are one place, so it is nulled (and not blocked on)."""
SHARED = ("phone", "website")
SHARED_SPOT = ("latitude", "longitude")
"""Coordinates on which places of more than MAX_SHARED names stand (the same latitude and
longitude; names told apart by their first word) are nulled: a directory that puts many
offices on one point (India Post's offices on their village's or PIN code's centre,
bench/matching/directories/chains.csv.gz) says nothing of where each stands, and "within 50 m"
would merge two offices of one PIN code that share nothing but that point. One place that
several directories list on its very spot keeps it (its names start alike). Nulling only takes
evidence away: a distance veto needs no spot three names share."""
CELL_DEGREES = 0.02
"""Side of the coordinate cell blocked on (about 2 km north-south)."""
BLOCKS = ("b_post_num", "b_post_tok", "b_city_tok", "b_city_last", "b_city_num", "b_cell_tok",
          "b_cell", "b_phone")  # fmt: skip
EVIDENCE = ("phone_all", "marks", "branch", "id_key", "known")
"""The columns of `placeflow.pipeline.match.evidence` (beside street_number and country) that
the hard rules read; the id rule reads id_key (the row's input file and own id, joined by
U+001F: null without an id, or when ids may repeat places), and known marks a place of the
warehouse. (One column for file and id: the pass's table stays narrow, which DuckDB inserts
into several times faster.)"""
FEATURES = (
    "name_core",
    "name_sorted",
    "name_tokens",
    "street_number",
    "street_name",
    "postcode",
    "city",
    "country",
    "latitude",
    "longitude",
    "phone",
    "website",
)

_BRANCH = (
    r"\s*\([^)]*\)",  # "(downtown)"
    r"\s+[-\u2013\u2014@|/]\s+.*$",  # " - airport", " @ union square"
    r"\s*#\s*\d+\w*",  # "#1234"
    r"(?i)\s+(?:store|branch|location|unit|no\.?)\s*\d+\w*(?-u:\b)",  # "store 12", "no. 3"
)
_SUITE = r"(?:^|\s)(?:suite|unit|apartment|room|rm|floor|fl|building|space|box)\s+\S+"
_NUMBER = r"(?:^|\s)(\d{1,6}[a-z]?)(?:\s|$)"
_WEB_PREFIX = r"^(?:[a-z][a-z0-9+.-]*://)?(?:www\d?\.)?"


def _ascii_fold(e: pl.Expr) -> pl.Expr:
    """Accents stripped: compatibility decomposition, then the combining marks dropped."""
    return e.str.normalize("NFKD").str.replace_all(r"\p{M}+", "")


def _spell(e: pl.Expr) -> pl.Expr:
    """Street abbreviations spelled out (two passes: a match uses up its surrounding space)."""
    short = [f" {w} " for w in STREET_WORDS]
    long = [f" {w} " for w in STREET_WORDS.values()]
    padded = pl.lit(" ") + e + pl.lit(" ")
    return padded.str.replace_many(short, long).str.replace_many(short, long).str.strip_chars(" ")


def _text(places: pl.DataFrame, name: str) -> pl.Series:
    if name not in places.columns:
        return pl.Series(name, [None] * places.height, pl.String)
    return places.get_column(name).cast(pl.String)


def _names(raw: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(name_core, branch): the name without its branch suffixes, and the words of the name
    those suffixes held (sorted, distinct; null when none was cut)."""
    folded = _fold_ascii_fast(raw).str.replace_all("\u2019", "'")
    stripped = folded
    for pattern in _BRANCH:
        cut = stripped.str.replace_all(pattern, "")
        stripped = cut.zip_with((cut.str.strip_chars() != "").fill_null(False), stripped)
    core = apply(name_identity(stripped), _spell).rename("name_core")
    at = (stripped != folded).fill_null(False).arg_true()
    branch = pl.Series("branch", [None] * raw.len(), pl.String)
    if at.len():  # the cut words: the whole name's words less the core's
        whole = apply(name_identity(folded.gather(at)), _spell).str.split(" ")
        cut_words = whole.list.set_difference(core.gather(at).str.split(" "))
        joined = cut_words.list.unique().list.sort().list.join(" ")
        branch = branch.scatter(at, joined)
    return core, branch.replace("", None).rename("branch")


def _fold_ascii_fast(values: pl.Series) -> pl.Series:
    """`_ascii_fold` over a column, on the values that are not ASCII alone (case kept)."""
    text = values.cast(pl.String)
    return patched(text, text.str.len_bytes() != text.str.len_chars(), _ascii_fold)


def _raw_line(places: pl.DataFrame) -> pl.Series:
    """The street line as given: `street`, else `address`."""
    line = pl.coalesce(pl.col("street"), pl.col("address"))
    frame = pl.DataFrame({"street": _text(places, "street"), "address": _text(places, "address")})
    return frame.select(line.alias("line")).to_series()


def _street_line(rest: pl.Series) -> pl.Series:
    """The street name: the folded line's rest (`street_parts`), abbreviations spelled out."""
    return apply(words(rest.str.replace_all(r"#\s*", " suite ")), _spell)


def _postcode(places: pl.DataFrame) -> pl.Series:
    frame = pl.DataFrame({"p": _text(places, "postcode"), "c": _text(places, "country")})
    code = pl.col("p").str.replace_all(r"\s", "").str.to_uppercase()
    us = pl.col("c").is_null() | (pl.col("c") == "US")
    zip_plus4 = code.str.contains(r"^\d{5}-?\d{4}$")
    short_zip = code.str.contains(r"^\d{3,4}$")
    fixed = (
        pl.when(us & zip_plus4).then(code.str.slice(0, 5))
        .when(us & short_zip).then(code.str.zfill(5))
        .otherwise(code)
    )  # fmt: skip
    return frame.select(pl.when(fixed != "").then(fixed).alias("postcode")).to_series()


def features(
    places: pl.DataFrame, *, first_id: int = 0, capped: bool = True, marked: bool = True
) -> pl.DataFrame:
    """One row per input place (same order) with `match_id` (`first_id` + its position) and the
    features; the block keys capped at MAX_BLOCK places among these, unless not `capped`; the
    marks all null unless `marked` (a look at the blocks alone: `tiny`)."""
    raw_line, raw_name = _raw_line(places), _text(places, "poi_name")
    unmarked = pl.Series("marks", [None] * places.height, pl.String)
    done: dict[str, tuple[pl.Series, pl.Series]] = parallel(
        {
            "name": lambda: _names(raw_name),
            "street": lambda: street_parts(raw_line),
            "marks": lambda: (marks(raw_name, raw_line) if marked else unmarked, raw_name),
            "city": lambda: (
                per_value(_text(places, "city"), lambda v: apply(words(v), _ascii_fold)),
                raw_name,
            ),
            "postcode": lambda: (_postcode(places), raw_name),
        },
        rows=places.height,
    )  # each task a pair of columns (the second unused where one is made), so one type
    (name, branch), (number, rest) = done["name"], done["street"]
    city = done["city"][0]
    street_rest = _street_line(rest)
    phone = phone_key(_text(places, "phone"))
    host = _text(places, "website").str.to_lowercase().str.strip_chars()
    host = host.str.replace(_WEB_PREFIX, "").str.replace(r"[/:?#].*$", "")

    def coordinate(col: str) -> pl.Series:
        if col not in places.columns:
            return pl.Series(col, [None] * places.height, pl.Float64)
        return places.get_column(col).cast(pl.Float64)

    frame = pl.DataFrame(
        {
            "match_id": pl.int_range(
                first_id, first_id + places.height, dtype=pl.Int64, eager=True
            ),
            "name_core": name,
            "street_number": number,
            "street_name": street_rest,
            "postcode": done["postcode"][0],
            "city": city,
            "country": _text(places, "country").str.to_uppercase(),
            "latitude": coordinate("latitude"),
            "longitude": coordinate("longitude"),
            "phone": phone,
            "phone_all": phone,
            "website": host,
            "marks": done["marks"][0],
            "branch": branch,
            "id_key": pl.DataFrame(
                {"f": _text(places, "source_file"), "i": _text(places, "source_id")}
            )
            .select(pl.concat_str(pl.col("f").fill_null(""), pl.lit("\x1f"), "i"))
            .to_series(),
            "known": places.get_column("known").cast(pl.Boolean)
            if "known" in places.columns
            else pl.Series([False] * places.height, dtype=pl.Boolean),
        }
    )
    empty_to_null = [
        pl.when(pl.col(c) != "").then(pl.col(c)).alias(c)
        for c in ("name_core", "street_number", "street_name", "city", "website")
    ]
    # list.eval's sort: polars 2.1's list.sort takes 20x longer on lists of strings (1M rows of
    # four words: 14.5 s against 0.9 s)
    tokens = pl.col("name_core").str.split(" ").list.unique().list.eval(pl.element().sort())
    frame = frame.with_columns(*empty_to_null).with_columns(
        tokens.alias("name_tokens"),
        tokens.list.join(" ").alias("name_sorted"),
        pl.col("name_core").str.split(" ").list.first().alias("name_token"),
        pl.col("name_core").str.split(" ").list.last().alias("name_last"),
        (pl.col("latitude") / CELL_DEGREES).floor().cast(pl.Int64).alias("_cy"),
        (pl.col("longitude") / CELL_DEGREES).floor().cast(pl.Int64).alias("_cx"),
    )
    if capped:
        own = [pl.when(pl.len().over(c) <= MAX_SHARED).then(pl.col(c)).alias(c) for c in SHARED]
        first = pl.col("name_core").str.split(" ").list.first()
        spot = first.n_unique().over(*SHARED_SPOT) <= MAX_SHARED
        own += [pl.when(spot).then(pl.col(c)).alias(c) for c in SHARED_SPOT]
        frame, keys = frame.with_columns(own), _blocks()
    else:
        keys = [key.alias(name) for name, key in _keys().items()]
    return frame.with_columns(keys).drop("_cy", "_cx", "name_token", "name_last")


def _key(*parts: pl.Expr) -> pl.Expr:
    """A 64-bit hash of the parts; null when any part is null. Two keys that collide only add a
    candidate pair (scored like any other), and integers keep the blocking joins small."""
    present = pl.all_horizontal([p.is_not_null() for p in parts])
    return pl.when(present).then(pl.struct(*parts).hash(seed=17))


def _keys() -> dict[str, pl.Expr]:
    """The blocking keys, uncapped."""
    c = pl.col
    return {
        "b_post_num": _key(c("postcode"), c("street_number")),
        "b_post_tok": _key(c("postcode"), c("name_token")),
        "b_city_tok": _key(c("country").fill_null(""), c("city"), c("name_token")),
        "b_city_num": _key(c("country").fill_null(""), c("city"), c("street_number")),
        "b_city_last": _key(c("country").fill_null(""), c("city"), c("name_last")),
        "b_cell_tok": _key(c("_cy"), c("_cx"), c("name_token")),
        "b_cell": _key(c("_cy"), c("_cx")),
        "b_phone": _key(c("phone")),
    }


def _blocks() -> list[pl.Expr]:
    """The blocking keys, each nulled where its block holds more than MAX_BLOCK places."""
    capped = []
    for name, key in _keys().items():
        size = pl.len().over(key)
        capped.append(pl.when(key.is_not_null() & (size <= MAX_BLOCK)).then(key).alias(name))
    return capped


def capped_blocks_sql(table: str) -> str:
    """SQL selecting `table` (features with uncapped block keys) with each block key nulled
    where more than MAX_BLOCK rows share it, and a phone or web host held by more than
    MAX_SHARED rows nulled (the phone's block key with it), and so the coordinates of a spot
    rows of more than MAX_SHARED names share (SHARED_SPOT): what `features` does in polars,
    over a table too big to hold (the big blocks are few, so each test is a join with a short
    list)."""

    def shared(column: str, most: int) -> str:
        return (
            f"{column} in (select {column} from {table} where {column} is not null"  # noqa: S608 - our columns and tables, an int
            f" group by all having count(*) > {most})"
        )

    nulled = {key: shared(key, MAX_BLOCK) for key in BLOCKS}
    nulled |= {column: shared(column, MAX_SHARED) for column in SHARED}
    nulled |= dict.fromkeys(SHARED_SPOT, "pf_shared_spot")
    nulled["b_phone"] += f" or {shared('phone', MAX_SHARED)}"
    capped = ",\n    ".join(
        f"case when {test} then null else {column} end as {column}"
        for column, test in nulled.items()
    )
    spot = ", ".join(SHARED_SPOT)
    names = f"select distinct {spot}, split_part(name_core, ' ', 1) from {table}"  # noqa: S608 - our columns and table
    spots = (
        f"select ({spot}) from ({names}) where latitude is not null"  # noqa: S608 - our columns
        f" group by all having count(*) > {MAX_SHARED}"
    )
    marked = f"select *, ({spot}) in ({spots}) as pf_shared_spot from {table}"  # noqa: S608 - our columns and table
    return f"select * exclude (pf_shared_spot) replace (\n    {capped}\n) from ({marked})"  # noqa: S608 - our columns and tables, ints
