"""Rules that keep apart places whose names or postcodes tell them apart, as SQL over a
pair (l, r) of the pass's places, and the DuckDB macros they call (`WORDS_MACRO`, created in
the pass's DuckDB with the marks' macros: `placeflow.pipeline.match.model.MARKS_MACRO`). Each
is part of the model's CONFLICT. Where they come from: India Post's offices
(bench/matching/directories/chains.csv.gz), 290 of whose 290 merges were false before them,
and db_stations' stations that share a street address (bench/RESULTS.md, #44 item 8).
"""

from __future__ import annotations

from placeflow.pipeline.match.evidence import DIRECTIONS
from placeflow.pipeline.placekey import STREET_WORDS

GENERIC_WORDS = (frozenset(STREET_WORDS.values()) - set(DIRECTIONS)) | {
    "strasse", "straße", "platz", "weg", "allee"}  # fmt: skip
"""Words that name no place of their own: the street words a name's abbreviations are spelled
into ("Str." is "street", "Pl." "place") and their German forms; not the directions ("Thanjavur
East" is not "Thanjavur Bazaar"). A name's unlike words (WORDS_DIFFER) are read without them:
"Lehnin, Beelitzer Str." is "Lehnin, Beelitzer Straße"."""
TYPE_WORDS = frozenset({"bahnhof", "bf", "bhf", "db", "hp", "haltepunkt", "pbf", "station", "stn"})
"""Words that say what kind of place a name is and nothing of which: "Groß Kreutz" is "Groß
Kreutz, Bhf", "Dresden-Niedersedlitz" its "Hp" (Haltepunkt). UNCONFIRMED reads names without
them (and without GENERIC_WORDS)."""
WORDS_MACRO = r"""
create or replace macro pf_only(a, b) as array_to_string(list_filter(a, lambda w:
    not list_contains(b, w) and not list_contains(pf_generic_words(), w)), ' ');
create or replace macro pf_extra(a, b) as array_to_string(list_filter(a, lambda w:
    not list_contains(b, w) and not list_contains(pf_generic_words(), w)
    and not list_contains(pf_type_words(), w)), ' ');
create or replace macro pf_plain(x) as regexp_replace(x, '[\s.^$|?*+()\[\]{}\\-]', '', 'g');
create or replace macro pf_abbreviates(s, t) as
    left(s, 1) = left(t, 1) and 2 * length(s) <= length(t)
    and regexp_matches(t, '^' || regexp_replace(s, '(.)', '\1.*', 'g'));
create or replace macro pf_unlike(x, y) as
    x <> '' and y <> '' and jaro_winkler_similarity(x, y) < 0.9 and damerau_levenshtein(x, y) > 1
    and not (case when length(pf_plain(x)) <= length(pf_plain(y))
                  then pf_abbreviates(pf_plain(x), pf_plain(y))
                  else pf_abbreviates(pf_plain(y), pf_plain(x)) end);
create or replace macro pf_words_differ(a, b) as
    a is not null and b is not null and pf_unlike(pf_only(a, b), pf_only(b, a));
""" + (
    "create or replace macro pf_generic_words() as ["
    + ", ".join(f"'{w}'" for w in sorted(GENERIC_WORDS))
    + "];"
    + "create or replace macro pf_type_words() as ["
    + ", ".join(f"'{w}'" for w in sorted(TYPE_WORDS))
    + "];"
)
"""pf_words_differ(a, b): does each of two names (their word lists) hold words the other lacks
(GENERIC_WORDS aside), those words unlike (pf_unlike: not a typo, not an abbreviation)?"""
WORDS_DIFFER = "pf_words_differ(l.name_tokens, r.name_tokens)"
"""Two names each holding words the other lacks (GENERIC_WORDS aside), those words unlike: not
a typo (Jaro-Winkler under 0.9 and more than one edit apart) nor an abbreviation (the shorter,
at most half as long, its letters in order in the longer from its first: "hbf" of
"hauptbahnhof", "bk" of "budruk"; not "kalur" of "kappalur"). "Bhari B.O" vs "Bhosa B.O",
"Deulgaon Kol" vs "Deulgaon Mali", "Frankfurt Flughafen Fernbahnhof" vs "Frankfurt Flughafen
Regionalbahnhof": a shared part (a chain's or an office type's word, a town, an airport) and a
part that names each place, which no record of one place changes."""
POSTCODES_DIFFER = (
    "(l.postcode is not null and r.postcode is not null"
    " and length(l.postcode) = length(r.postcode) and l.postcode <> r.postcode)"
)
"""Two complete postcodes of one length that differ: a postal directory's offices of one
village name in two PIN codes, a chain's stores in two ZIP codes. A code that lost a digit, or
an outward code beside a full one, is not complete against the other and proves nothing."""

QUALIFIED_KM = 0.3
"""One name the other's plus words of its own (GENERIC_WORDS aside), both places with
coordinates more than this apart: two places (QUALIFIED_FAR). Where it comes from
(bench/matching_distance.py's pairs, read this way): of the 1,781 pairs of records of one place
in the labelled directories whose names differ so, 99% lie within 244 m and 9 beyond 300 m
(4 of them beyond FAR_KM already: stations two directories place at different entrances, "München
Flughafen Terminal" / "... Terminal 2" at 375 m); db_stations' "Norddeich" and "Norddeich Mole",
two stations at one street address, lie 330 m apart."""
QUALIFIED_FAR = (
    "(pf_only(l.name_tokens, r.name_tokens) = '') <> (pf_only(r.name_tokens, l.name_tokens) = '')"
    " and l.latitude is not null and r.latitude is not null"
    " and power((l.latitude - r.latitude) * 110.57, 2)"
    " + power((l.longitude - r.longitude) * 111.32 * cos(radians(l.latitude)), 2)"
    f" > {QUALIFIED_KM * QUALIFIED_KM}"
)
"""A name that is the other plus a qualifier, the two places more than QUALIFIED_KM apart (the
model's flat-earth distance): "Norddeich" and "Norddeich Mole" 330 m apart are two stations."""
COARSE_DEGREES = 0.01
"""Coordinates both of whose parts are whole multiples of this (two decimals or fewer: a
kilometre's grain) say only which kilometre a place is in: India Post gives a quarter of its
offices so (bench/matching/directories/chains.csv.gz; "Sukadi" and "Sukali", two villages, both
on 20.85, 80.33); no labelled directory gives more than 1% of its rows so."""


def _coarse(side: str) -> str:
    """Whether a side's coordinates are given to COARSE_DEGREES or coarser."""
    return " and ".join(
        f"abs({side}.{c} / {COARSE_DEGREES} - round({side}.{c} / {COARSE_DEGREES})) < 1e-6"
        for c in ("latitude", "longitude")
    )


_EXTRA = ("pf_extra(l.name_tokens, r.name_tokens)", "pf_extra(r.name_tokens, l.name_tokens)")
_PLUS = (
    f"abs(length({_EXTRA[0]}) - length({_EXTRA[1]})) >= 2"
    f" and (starts_with({_EXTRA[0]}, {_EXTRA[1]}) or starts_with({_EXTRA[1]}, {_EXTRA[0]}))"
)
"""One name the other's plus a word or more ("Turbhe" / "Turbhe Market") or plus two letters
or more at a word's end ("Ambav" / "Ambavali"), GENERIC_WORDS and TYPE_WORDS aside."""
_COARSE_NAMES = (
    f"(({_coarse('l')}) or ({_coarse('r')}))"
    " and (l.name_sorted <> r.name_sorted or coalesce(l.branch, '') <> coalesce(r.branch, ''))"
)
"""Names that differ at all (a letter, a branch: "Pindkepar (T)" / "Pindkepar"), one side's
coordinates coarse: nothing but the names and the postcode says where either is."""
_CONFIRMED = (
    "l.phone = r.phone or l.website = r.website or l.street_number = r.street_number"
    " or jaro_winkler_similarity(l.street_name, r.street_name) >= 0.9 or l.id_key = r.id_key"
)
"""A sign of one identity beyond coordinates and postcode: the same phone (one no more than
two places hold), web host, house number, like street, or id in one file."""
UNCONFIRMED = (
    "coalesce(l.name_core is not null and r.name_core is not null"
    f" and (({_PLUS}) or ({_COARSE_NAMES})) and not coalesce({_CONFIRMED}, false), false)"
)
"""Two names that differ as two places' of one postcode do (one the other's plus a qualifier:
"Turbhe" / "Turbhe Market", "Kangayam" / "Kangayam North"; or any difference on coarse
coordinates: "SMariyur" / "TMariyur"), with no sign of one identity beyond coordinates and
postcode (_CONFIRMED): two places. A false merge costs more than a missed duplicate: such a
pair of one place written twice is left unmerged unless a phone, web host, street or id says
it is one. India Post's offices without their ids (bench/RESULTS.md, #44 item 8): 13 false
merges of 13 before this rule."""
APART = (WORDS_DIFFER, POSTCODES_DIFFER, QUALIFIED_FAR, UNCONFIRMED)
"""This module's rules, each part of the model's CONFLICT."""

__all__ = ["APART", "COARSE_DEGREES", "GENERIC_WORDS", "POSTCODES_DIFFER", "QUALIFIED_FAR",
           "QUALIFIED_KM", "TYPE_WORDS", "UNCONFIRMED", "WORDS_DIFFER", "WORDS_MACRO"]  # fmt: skip
