"""place_key: a stable hash of a place's normalised identity, so duplicates are sent only once.

Identity, field by field (null counts as empty, and every field is part of the key, so two rows
share a key only when all of them agree after normalisation: conservative, since a false merge
loses a place while a missed one costs a credit):

- name: Unicode NFKC (accents kept: café is not cafe), lower case, "&" -> "and", apostrophes
  dropped, a sign before a number spelled out ("LEVEL -1" -> "level minus 1": +1 and -1 are
  two levels; a hyphen between two parts, "2-4-1", is no sign), other punctuation and symbols
  -> space, a leading "the " and a trailing " the"
  ("apple pan, the") dropped, trailing legal forms (inc, llc, ltd, co, corp, gmbh, ...) dropped;
  if nothing is left, the plain lower-cased name is used instead.
- street, address: as the name (without the article and legal-form rules), then each common
  abbreviation spelled out (st -> street, blvd/blv -> boulevard, n -> north, ...).
- city, region: as the name, without those rules (no "la" -> "los angeles": never guessed).
- postcode: spaces and control characters removed, upper case. country: the alpha-2 code.
- latitude, longitude: rounded to 4 decimals (about 11 m), as integers of 1e-4 degrees.

Text is lower-cased word by word on a fast path of literal replacements for ASCII values; values
with other characters take the full Unicode path (NFKC, Unicode letter classes). A test checks
that both paths agree on ASCII. Low-cardinality fields are normalised once per distinct value.

The key is "pk_" + the first 24 hex digits (96 bits) of MD5 over "pk1" and the identity fields
joined by U+001F, computed by DuckDB (already a dependency) over whole columns. MD5 serves as a
fingerprint here, not as a defence, and is about twice as fast as SHA-256 in DuckDB. It is the
standard digest of the UTF-8 bytes, so keys do not change with the DuckDB or polars version
(polars' own `hash` is not stable across versions); a test checks it against hashlib.
"""

from __future__ import annotations

import atexit
import hashlib
from functools import lru_cache

import duckdb
import polars as pl

from placeflow.fields import PLACE_FIELDS
from placeflow.pipeline.columnar import apply, parallel, patched, per_value
from placeflow.support.arrow import fetched, scannable

KEY_VERSION = "pk1"
SEPARATOR = "\x1f"
LEGAL_FORMS = (
    "inc",
    "incorporated",
    "llc",
    "l l c",
    "ltd",
    "limited",
    "co",
    "corp",
    "corporation",
    "company",
    "gmbh",
    "plc",
    "pty",
    "sarl",
    "srl",
    "bv",
    "ag",
)
STREET_WORDS: dict[str, str] = {
    "st": "street",
    "str": "street",
    "ave": "avenue",
    "av": "avenue",
    "blvd": "boulevard",
    "blv": "boulevard",
    "rd": "road",
    "dr": "drive",
    "ln": "lane",
    "hwy": "highway",
    "pl": "place",
    "ct": "court",
    "pkwy": "parkway",
    "pky": "parkway",
    "sq": "square",
    "ter": "terrace",
    "cir": "circle",
    "ctr": "center",
    "fwy": "freeway",
    "expy": "expressway",
    "plz": "plaza",
    "trl": "trail",
    "mt": "mount",
    "ste": "suite",
    "apt": "apartment",
    "bldg": "building",
    "n": "north",
    "s": "south",
    "e": "east",
    "w": "west",
    "ne": "northeast",
    "nw": "northwest",
    "se": "southeast",
    "sw": "southwest",
}
IDENTITY = (
    "id_name",
    "id_street",
    "id_address",
    "id_city",
    "id_region",
    "id_postcode",
    "id_country",
    "id_latitude",
    "id_longitude",
)
_LEGAL = r"(?: (?:" + "|".join(LEGAL_FORMS) + r"))+$"
_ARTICLE = r" the$"
_INVISIBLE = r"[\s\p{Cc}]"
"""Whitespace and control characters (U+001F, the separator, among them)."""
_APOSTROPHES = ("'", "`")
_ASCII_BREAKS = [chr(c) for c in range(128) if not chr(c).isalnum() and chr(c) not in " &'`"]
_FAST_FROM = ["&", *_APOSTROPHES, *_ASCII_BREAKS]
_FAST_TO = [" and ", *[""] * len(_APOSTROPHES), *[" "] * len(_ASCII_BREAKS)]


def _words_ascii(text: pl.Expr) -> pl.Expr:
    """`_words_any` for ASCII text, with literal replacements only (several times faster)."""
    replaced = text.str.to_lowercase().str.replace_many(_FAST_FROM, _FAST_TO)
    return replaced.str.replace_all(" {2,}", " ").str.strip_chars(" ")


def _words_any(text: pl.Expr) -> pl.Expr:
    """Lower-case words of letters, marks and digits, one space apart ("&" read as "and")."""
    return (
        text.str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all("&", " and ", literal=True)
        .str.replace_all(r"['`\u2018\u2019\u00b4\u02bc]", "")
        .str.replace_all(r"[^\p{L}\p{M}\p{N}]+", " ")
        .str.strip_chars(" ")
    )


_SIGN_BEFORE = r"(^|[\s(\[,;:/])"
"""What stands before a sign: the start, a space or an opening punctuation (a hyphen between
two parts, "2-4-1" or "A-1", is no sign)."""


def _signs(text: pl.Expr) -> pl.Expr:
    """A sign before a number spelled out ("LEVEL -1" -> "LEVEL minus 1"), so that punctuation
    turned to space does not make +1 and -1 one level."""
    return text.str.replace_all(_SIGN_BEFORE + r"\+(\d)", "$1 plus $2").str.replace_all(
        _SIGN_BEFORE + "[-\u2212](\\d)", "$1 minus $2"
    )


def words(values: pl.Series) -> pl.Series:
    """Lower-case words, one space apart: ASCII rows on the fast path, the rest in full; a
    sign before a number kept as a word (`_signs`)."""
    maybe = values.str.contains_any(["+", "-", "\u2212"]).fill_null(False)
    if maybe.any():
        values = patched(values, maybe, _signs)
    wide = values.str.len_bytes() != values.str.len_chars()
    return patched(apply(values, _words_ascii), wide, _words_any).rename(values.name)


def name_identity(names: pl.Series) -> pl.Series:
    """Words, without a leading/trailing article or trailing legal forms (never left empty)."""
    core = words(names)
    core = patched(core, core.str.ends_with(" the"), lambda e: e.str.replace(_ARTICLE, ""))
    core = patched(core, core.str.contains(_LEGAL), lambda e: e.str.replace(_LEGAL, ""))
    core = patched(core, core.str.starts_with("the "), lambda e: e.str.strip_prefix("the "))
    empty = (core == "").fill_null(False).arg_true()
    if empty.len() == 0:
        return core
    plain = apply(names.gather(empty), lambda e: e.str.normalize("NFKC").str.to_lowercase())
    return core.clone().scatter(empty, plain.str.replace_all(_INVISIBLE, "").str.strip_chars())


def street_identity(streets: pl.Series) -> pl.Series:
    """Words with abbreviations spelled out; two passes, since a match uses up its space."""
    long = [f" {w} " for w in STREET_WORDS.values()]
    short = [f" {w} " for w in STREET_WORDS]

    def spell(text: pl.Expr) -> pl.Expr:
        padded = pl.lit(" ") + text + pl.lit(" ")
        spelled = padded.str.replace_many(short, long).str.replace_many(short, long)
        return spelled.str.strip_chars(" ")

    return apply(words(streets), spell)


def _postcode(values: pl.Series) -> pl.Series:
    """Upper case without spaces or control characters (so no value holds the separator)."""
    spaced = values.str.contains(_INVISIBLE)
    return patched(values, spaced, lambda e: e.str.replace_all(_INVISIBLE, "")).str.to_uppercase()


def _degrees(values: pl.Series) -> pl.Series:
    scaled = (values.cast(pl.Float64) * 10_000).round().cast(pl.Int64)
    return scaled.cast(pl.String)


def identity_columns(places: pl.DataFrame) -> pl.DataFrame:
    """The normalised identity each row's place_key hashes (for tests and debugging)."""

    def text(field: str) -> pl.Series:
        if field not in places.columns:
            return pl.Series(field, [None] * places.height, pl.String)
        return places.get_column(field).cast(pl.String)

    def number(field: str) -> pl.Series:
        if field not in places.columns:
            return pl.Series(field, [None] * places.height, pl.Float64)
        return places.get_column(field)

    built = parallel(
        {
            "id_name": lambda: name_identity(text("poi_name")),
            "id_street": lambda: street_identity(text("street")),
            "id_address": lambda: street_identity(text("address")),
            "id_city": lambda: per_value(text("city"), words),
            "id_region": lambda: per_value(text("region"), words),
            "id_postcode": lambda: _postcode(text("postcode")),
            "id_country": lambda: per_value(text("country"), lambda v: v.str.to_uppercase()),
            "id_latitude": lambda: _degrees(number("latitude")),
            "id_longitude": lambda: _degrees(number("longitude")),
        },
        rows=places.height,
    )
    return pl.DataFrame([s.rename(n) for n, s in built.items()])


def identity_text(identity: pl.DataFrame) -> pl.Series:
    """The exact text hashed: the key version and every identity field, null as empty."""
    parts = [pl.lit(KEY_VERSION)] + [pl.col(c).fill_null("") for c in IDENTITY]
    return identity.select(pl.concat_str(parts, separator=SEPARATOR).alias("k")).to_series()


@lru_cache(maxsize=1)
def _hasher() -> duckdb.DuckDBPyConnection:
    """One private in-memory DuckDB for hashing (a connection costs ~30 ms; a cursor ~1 ms)."""
    return duckdb.connect(":memory:")


# Free the connection before interpreter teardown (a DuckDB object alive then is reported as
# a leak by its bindings).
atexit.register(_hasher.cache_clear)


SMALL_DIGEST = 1_000
"""Up to this many texts are digested here (hashlib's MD5, the same digest), not by DuckDB:
the private connection costs more than the texts (a 10-row run's keys)."""


def digest_keys(texts: pl.Series) -> pl.Series:
    """'pk_' + the first 24 hex digits of MD5 of each text's UTF-8, computed by DuckDB (a few
    texts by hashlib: SMALL_DIGEST)."""
    if texts.len() <= SMALL_DIGEST:
        md5 = hashlib.md5  # a key's digest, not a secret's
        digested = [
            None if t is None else "pk_" + md5(t.encode(), usedforsecurity=False).hexdigest()[:24]
            for t in texts.to_list()
        ]
        return pl.Series("place_key", digested, dtype=pl.String)
    frame = scannable(texts.rename("k").to_frame())
    with _hasher().cursor() as con:  # the rows' order is kept (DuckDB's insertion order)
        con.register("texts", frame)
        sql = "select 'pk_' || left(md5(k), 24) as place_key from texts"
        out: pl.DataFrame = fetched(con.sql(sql))
    return out.get_column("place_key")


def place_keys(places: pl.DataFrame) -> pl.Series:
    """The place_key of each row of a normalised places frame."""
    return digest_keys(identity_text(identity_columns(places))).rename("place_key")


def place_key_expr() -> pl.Expr:
    """`place_keys` as an expression over the place fields (for `with_columns`)."""
    fields = pl.struct(*PLACE_FIELDS)
    return fields.map_batches(
        lambda s: place_keys(s.struct.unnest()), return_dtype=pl.String
    ).alias("place_key")
