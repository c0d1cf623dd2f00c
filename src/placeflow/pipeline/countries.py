"""Country text -> ISO 3166-1 alpha-2, built once from pycountry: codes, names and common aliases.

Accepted: alpha-2 (any case), alpha-3, the official, short and common names, a few everyday
aliases (USA, UK, Great Britain, Russia, Holland, ...), and derived spellings (names without
accents, without a parenthesis, the part before "X, Republic of"). A derived spelling shared
by two countries ("Korea") is dropped rather than guessed. Numeric codes are not accepted (a
stray postcode must not become a country). Matching ignores case, dots, extra spaces and a
leading "the".
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import polars as pl
import pycountry

ALIASES: dict[str, str] = {
    "USA": "US",
    "United States of America": "US",
    "UK": "GB",
    "Great Britain": "GB",
    "Britain": "GB",
    "England": "GB",
    "Scotland": "GB",
    "Wales": "GB",
    "Northern Ireland": "GB",
    "Russia": "RU",
    "South Korea": "KR",
    "Korea, South": "KR",
    "North Korea": "KP",
    "Korea, North": "KP",
    "Turkey": "TR",
    "Holland": "NL",
    "Ivory Coast": "CI",
    "Cape Verde": "CV",
    "Swaziland": "SZ",
    "Macedonia": "MK",
    "Burma": "MM",
    "UAE": "AE",
    "DR Congo": "CD",
    "DRC": "CD",
    "Democratic Republic of the Congo": "CD",
    "Congo-Brazzaville": "CG",
    "Congo-Kinshasa": "CD",
    "Vatican": "VA",
    "Vatican City": "VA",
    "Brunei": "BN",
    "Macau": "MO",
    "East Timor": "TL",
    "Czech Republic": "CZ",
}


def country_key(text: pl.Expr) -> pl.Expr:
    """The form country text is matched in: lower case, no dots, one space, no leading 'the'."""
    return (
        text.str.to_lowercase()
        .str.replace_all(".", "", literal=True)
        .str.replace_all("\u2019", "'", literal=True)
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
        .str.strip_prefix("the ")
    )


def _plain(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _spellings() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    primary: list[tuple[str, str]] = []
    derived: list[tuple[str, str]] = []
    for country in pycountry.countries:
        code = country.alpha_2
        names = [country.name]
        names += [getattr(country, a) for a in ("official_name", "common_name")
                  if hasattr(country, a)]  # fmt: skip
        primary += [(code, code), (country.alpha_3, code)] + [(n, code) for n in names]
        for name in names:
            variants = {_plain(name), name.split(" (")[0], name.split(", ")[0]}
            derived += [(v, code) for v in variants if v and v != name]
    primary += [(alias, code) for alias, code in ALIASES.items()]
    return primary, derived


def _keyed(pairs: list[tuple[str, str]]) -> dict[str, set[str]]:
    frame = pl.DataFrame(pairs, schema={"text": pl.String, "code": pl.String}, orient="row")
    keyed = frame.select(country_key(pl.col("text")).alias("key"), "code").unique()
    found: dict[str, set[str]] = {}
    for key, code in keyed.iter_rows():  # a few thousand spellings, built once
        found.setdefault(key, set()).add(code)
    return found


@lru_cache(maxsize=1)
def country_lookup() -> dict[str, str]:
    """Matching key -> alpha-2, unambiguous spellings only (primary spellings win)."""
    primary, derived = (_keyed(p) for p in _spellings())
    lookup = {k: next(iter(c)) for k, c in derived.items() if len(c) == 1}
    for key, codes in primary.items():
        if len(codes) == 1:
            lookup[key] = next(iter(codes))
        else:  # two countries claim one primary spelling: accept neither
            lookup.pop(key, None)
    return lookup


def to_alpha2(text: pl.Expr) -> pl.Expr:
    """Alpha-2 for recognised country text, null for anything else (and for null)."""
    return country_key(text).replace_strict(country_lookup(), default=None, return_dtype=pl.String)
