"""The Splink model of the fuzzy matching pass: blocking rules, comparisons, hard rules.

The comparisons and blocking rules are defined here; their m and u probabilities were estimated
once with EM (bench/matching_train.py, on generated places) and kept in `model.json` beside this
file, so a run loads fixed parameters: deterministic, and no training time per run.

Hard rules (HARD_RULES): different countries, street numbers or phones, more than FAR_KM apart,
different ids in one input file (`placeflow.pipeline.match.evidence`), two places both known
in the warehouse; and (CHAIN_FAR) two places of a chain more than STORE_KM apart (both
distances from the labelled directories). The first three are part of every blocking rule, so
a pair breaking one is never scored; the rest, with the rules that need lists or string tests
(CONFLICT: marks, branch names, CHAIN_FAR, unlike words and postcodes: `apart`) and the rule
for a chain's name (CHAIN_AGREES), are tested on the pairs scored at or above the threshold
and over the clusters, in DuckDB. A merge's evidence is each comparison's level, kept as a
digit a comparison (`levels_sql`) and rendered where it is stored (`evidence_json_sql`).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placeflow.pipeline.match.apart import APART, WORDS_MACRO
from placeflow.pipeline.match.features import BLOCKS

if TYPE_CHECKING:  # Splink loads when a pass scores pairs, not with the rules' SQL
    import splink.comparison_level_library as cll
    from splink import SettingsCreator
    from splink.blocking_rule_library import CustomRule
    from splink.comparison_library import CustomComparison
    from splink.internals.comparison_level_creator import ComparisonLevelCreator

    Level = ComparisonLevelCreator | dict[str, Any]

MODEL_PATH = Path(__file__).with_name("model.json")
FAR_KM = 0.5
"""Places farther apart than this (both with coordinates) are never merged. Where it comes from
(bench/matching_distance.py over the labelled directories, bench/matching/directories): of the
24,082 pairs of records of one place with coordinates, half lie within 0.5 m, 99% within 220 m,
all but 94 within 0.5 km; the largest, 3.94 km, are a station listed twice by one directory
(trainline's two "Skopje") and stations two directories place at different entrances (1.45 km
at most). Those far pairs are stations and airports, places of a kilometre; a veto at their
largest distance would let two shops of one name merge across a town, so it stays at 0.5 km,
stricter than the data's largest: the 94 far pairs (0.4%) are the misses it costs."""
STORE_KM = 0.15
"""A chain's places (its name shared by CHAIN_MIN places or more) farther apart than this (both
with coordinates) are never merged, whatever their addresses say: the largest distance between
two records of one store in the labelled directories (bench/matching_distance.py: category
`store`, 128 pairs) is 84 m (IKEA Gran Vía, listed twice by its own directory; perturbed copies
within 28 m), and the margin is as much again for geocoders that put a store at its door or
its parcel's middle. Units at one airport, service plaza or mall share the venue's street
address but not its spot: two of a burger chain's airport units merged on their address
(issue #44)."""


def _km2(template: str) -> str:
    """Squared distance in km between a pair's coordinates (flat-earth: exact enough below
    5 km); `template` names a column of a side, e.g. "{side}.{col}" or "{col}_{side}"."""
    lat_l, lat_r, lon_l, lon_r = (
        template.format(col=c, side=s)
        for c, s in (("latitude", "l"), ("latitude", "r"), ("longitude", "l"), ("longitude", "r"))
    )
    return (
        f"power(({lat_l} - {lat_r}) * 110.57, 2)"
        f" + power(({lon_l} - {lon_r}) * 111.32 * cos(radians({lat_l})), 2)"
    )


_NEAR = f"{_km2('{side}.{col}')} <= {FAR_KM * FAR_KM}"
_PHONE_DIGITS = "least(len(l.phone_all), len(r.phone_all))"
HARD_RULES = (
    "(l.country is null or r.country is null or l.country = r.country)",
    "(l.street_number is null or r.street_number is null or l.street_number = r.street_number)",
    f"(l.latitude is null or r.latitude is null or {_NEAR})",
    f"(l.phone_all is null or r.phone_all is null or right(l.phone_all, {_PHONE_DIGITS})"
    f" = right(r.phone_all, {_PHONE_DIGITS}))",
    "(l.id_key is null or r.id_key is null or l.id_key = r.id_key"
    " or split_part(l.id_key, chr(31), 1) <> split_part(r.id_key, chr(31), 1))",
    "not (l.known and r.known)",
)
"""What may never be merged, as SQL over a pair (l, r): each rule must hold."""
_MARKS = r"""
create or replace macro pf_marks_differ(a, b) as
    (len(list_filter(list_concat(a, b), lambda m:
        not (list_contains(a, m) and list_contains(b, m))
        and list_contains(list_transform(a, lambda x: split_part(x, ':', 1)), split_part(m, ':', 1))
        and list_contains(list_transform(b, lambda x: split_part(x, ':', 1)), split_part(m, ':', 1))
    )) > 0)
    or list_contains(a, 's:drive') <> list_contains(b, 's:drive');
create or replace macro pf_marks_conflict(a, b) as
    (a is not null or b is not null)
    and pf_marks_differ(string_split(coalesce(a, ''), '|'), string_split(coalesce(b, ''), '|'));
"""
MARKS_MACRO = _MARKS + WORDS_MACRO
"""DuckDB macros created in the pass's DuckDB before CONFLICT is used (and `apart`'s): do two
places' marks differ in a class both name (or a drive-thru only one names)?"""
BRANCH_ALIKE = 0.9
_ONLY = (
    "array_to_string(list_filter(string_split({a}.branch, ' '),"
    " lambda w: not list_contains(string_split({b}.branch, ' '), w)), ' ')"
)
"""The words of one branch name ({a}) that the other ({b}) lacks."""
CHAIN_FAR = (
    "coalesce((l.name_core in (select name_core from match_chains)"  # noqa: S608 - our table
    " or r.name_core in (select name_core from match_chains))"
    " and l.latitude is not null and r.latitude is not null"
    f" and {_km2('{side}.{col}')} > {STORE_KM * STORE_KM}, false)"
)
"""A pair of a chain's places more than STORE_KM apart (the pass's table match_chains holds
the chains' names)."""
CONFLICT = " or ".join(
    [
        f"not ({' and '.join(HARD_RULES)})",
        CHAIN_FAR,
        *APART,
        "pf_marks_conflict(l.marks, r.marks)",
        "(l.branch is not null and r.branch is not null and l.branch <> r.branch"
        f" and {_ONLY.format(a='l', b='r')} <> '' and {_ONLY.format(a='r', b='l')} <> ''"
        f" and jaro_winkler_similarity({_ONLY.format(a='l', b='r')},"
        f" {_ONLY.format(a='r', b='l')}) < {BRANCH_ALIKE})",
    ]
)
"""A pair (l, r) that may never be merged: a hard rule broken, a chain's places farther apart
than one store's records ever are (CHAIN_FAR), marks of one class that differ, or two branch
names each with words the other lacks, those words not alike (not a typo):
"NRI Koramangala" vs "SME Koramangala", not "Nighoje" vs "Nighjoe" or "Adyar" vs "CAC Adyar"."""
CHAIN_MIN = 5
"""Places sharing a name (name_core) in one pass from which the name is a chain's (the pass
lists those names in its table match_chains)."""
CHAIN_AGREES = (
    "(not (l.name_core in (select name_core from match_chains)"  # noqa: S608 - our table, constants
    " or r.name_core in (select name_core from match_chains))"
    " or (l.street_number = r.street_number and (l.street_name = r.street_name"
    " or jaro_winkler_similarity(l.street_name, r.street_name) >= 0.9))"
    f" or (l.latitude is not null and r.latitude is not null and {_km2('{side}.{col}')} <= 0.0025)"
    " or (l.phone = r.phone and (l.street_name is null or r.street_name is null"
    " or jaro_winkler_similarity(l.street_name, r.street_name) >= 0.9)))"
)
"""A pair whose name is a chain's (CHAIN_MIN places or more share it) is merged only on
address-level agreement: the same house number on a like street, within 50 m, or the same
phone of its own (one no more than MAX_SHARED places hold) with no unlike street."""
NAMES_ALIKE = (
    "(l.name_core is null or r.name_core is null or l.name_sorted = r.name_sorted"
    " or jaro_winkler_similarity(l.name_core, r.name_core) >= 0.88"
    " or len(list_intersect(l.name_tokens, r.name_tokens))"
    " = least(len(l.name_tokens), len(r.name_tokens)))"
)
"""A scored pair (its places l and r) is merged only when the names are alike: two businesses
of one hotel share its street, number and phone, and only their names tell them apart."""


BLOCKING_HARD_RULES = HARD_RULES[:3]
"""The hard rules each blocking rule carries (a column's equality or a distance: cheap on every
candidate pair); the others are tested on the scored pairs (CONFLICT)."""


def blocked_pair_sql(table: str) -> str:
    """Whether two places of `table` meet a blocking rule, in the rules' own SQL: asked of a
    pass too small to need Splink's join (`engine`)."""
    rules = " and ".join(BLOCKING_HARD_RULES)
    meets = " or ".join(f"(l.{key} = r.{key} and {rules})" for key in BLOCKS)
    return (
        f"select exists (select 1 from {table} l join {table} r"  # noqa: S608 - our table, the rules' SQL
        f" on l.match_id < r.match_id and ({meets}))"
    )


def blocking_rules() -> list[CustomRule]:
    """One rule per blocking key, each with BLOCKING_HARD_RULES attached."""
    from splink.blocking_rule_library import CustomRule

    rules = " and ".join(BLOCKING_HARD_RULES)
    return [CustomRule(f"l.{key} = r.{key} and {rules}") for key in BLOCKS]


def _custom(sql: str, label: str) -> cll.CustomLevel:
    import splink.comparison_level_library as cll

    return cll.CustomLevel(sql, label_for_charts=label)


def comparisons() -> list[CustomComparison]:
    """Name, street number, street, postcode, city, phone, website host, distance."""
    import splink.comparison_level_library as cll
    from splink.comparison_library import CustomComparison

    both_coords = "latitude_l is not null and latitude_r is not null"
    km2 = _km2("{col}_{side}")
    contained = (
        "len(list_intersect(name_tokens_l, name_tokens_r))"
        " = least(len(name_tokens_l), len(name_tokens_r))"
    )
    name_levels: list[Level] = [
        cll.NullLevel("name_core"),
        cll.ExactMatchLevel("name_core"),
        cll.Or(cll.ExactMatchLevel("name_sorted"), cll.JaroWinklerLevel("name_core", 0.95)),
        cll.JaroWinklerLevel("name_core", 0.88),
        _custom(contained, "one name's words within the other's"),
        cll.JaroWinklerLevel("name_sorted", 0.75),
        cll.ElseLevel(),
    ]
    name = CustomComparison(name_levels, output_column_name="name")
    number = CustomComparison(
        [cll.NullLevel("street_number"), cll.ExactMatchLevel("street_number"), cll.ElseLevel()],
        output_column_name="street_number",
    )
    street = CustomComparison(
        [
            cll.NullLevel("street_name"),
            cll.ExactMatchLevel("street_name"),
            cll.JaroWinklerLevel("street_name", 0.9),
            cll.JaroWinklerLevel("street_name", 0.7),
            cll.ElseLevel(),
        ],
        output_column_name="street_name",
    )

    def exact(column: str) -> CustomComparison:
        levels: list[Level] = [
            cll.NullLevel(column),
            cll.ExactMatchLevel(column),
            cll.ElseLevel(),
        ]
        return CustomComparison(levels, output_column_name=column)

    city = CustomComparison(
        [
            cll.NullLevel("city"),
            cll.ExactMatchLevel("city"),
            cll.JaroWinklerLevel("city", 0.88),
            cll.ElseLevel(),
        ],
        output_column_name="city",
    )
    distance = CustomComparison(
        [
            {"sql_condition": f"not ({both_coords})", "is_null_level": True},
            _custom(f"{km2} <= 0.0025", "within 50 m"),
            _custom(f"{km2} <= 0.04", "within 200 m"),
            cll.ElseLevel(),
        ],
        output_column_name="distance",
    )
    return [name, number, street, exact("postcode"), city, exact("phone"), exact("website"),
            distance]  # fmt: skip


def untrained_settings() -> SettingsCreator:
    """The model before training (bench/matching_train.py estimates it)."""
    from splink import SettingsCreator

    return SettingsCreator(
        link_type="dedupe_only",
        unique_id_column_name="match_id",
        comparisons=list(comparisons()),
        blocking_rules_to_generate_predictions=list(blocking_rules()),
        retain_matching_columns=False,
        retain_intermediate_calculation_columns=False,
        probability_two_random_records_match=1e-5,
    )


@lru_cache(maxsize=1)
def trained_settings() -> dict[str, Any]:
    """The trained model kept in the repository (a fresh copy is returned by `settings`)."""
    loaded: dict[str, Any] = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return loaded


def settings() -> dict[str, Any]:
    """A copy of the trained model, safe to hand to a Linker (which may change it), with this
    module's blocking rules (hard rules attached)."""
    copied: dict[str, Any] = json.loads(json.dumps(trained_settings()))
    copied.pop("linker_uid", None)
    copied["retain_matching_columns"] = False  # the pass reads ids and probability alone
    copied["blocking_rules_to_generate_predictions"] = [
        rule.create_blocking_rule_dict("duckdb") for rule in blocking_rules()
    ]
    return copied


EVIDENCE_COLUMNS = ("name_core", "name_sorted", "name_tokens", "street_number", "street_name",
                    "postcode", "city", "phone", "website", "latitude", "longitude")  # fmt: skip
"""The columns the comparisons read, which `levels_sql` needs as <column>_l and <column>_r."""
NO_LEVEL = "-"
"""A comparison's place in `levels_sql` when none of its levels holds (Splink's comparisons end
with an ELSE level, so never in practice): rendered as a null level and weight."""


def _levels() -> list[tuple[str, list[dict[str, Any]]]]:
    """Each comparison of the trained model: its name and its levels, in Splink's order (at
    most ten, so that each level index is one digit: the model's tests hold it to that)."""
    return [(c["output_column_name"], c["comparison_levels"])
            for c in trained_settings()["comparisons"]]  # fmt: skip


def levels_sql() -> str:
    """SQL of a pair's levels, over columns named as Splink names them (<column>_l, <column>_r:
    EVIDENCE_COLUMNS): a string of one digit per comparison, in the model's order, the index of
    the level the pair falls in (the first whose condition holds, as Splink scores it). The
    pass keeps these few bytes a pair; `evidence_json_sql` renders them for a person."""
    digits = []
    for _name, levels in _levels():
        whens = []
        for index, level in enumerate(levels):
            condition = level["sql_condition"]
            is_else = condition.strip().upper() == "ELSE"
            whens.append(f"else '{index}'" if is_else else f"when {condition} then '{index}'")
        if not any(w.startswith("else") for w in whens):
            whens.append(f"else '{NO_LEVEL}'")
        digits.append(f"case {' '.join(whens)} end")
    return f"concat({', '.join(digits)})"


def evidence_json_sql(column: str) -> str:
    """SQL rendering `column` (`levels_sql`'s digits) as the evidence a person reads: a JSON
    object, each comparison's name -> the label of the pair's level and its match weight
    (log2 m/u; 0 for a null level); null where `column` is null."""
    parts = []
    for position, (name, levels) in enumerate(_levels(), start=1):
        digit = f"substr({column}, {position}, 1)"
        labels, weights = [], []
        for index, level in enumerate(levels):
            weight = (
                0.0 if level.get("is_null_level")
                else math.log2(level["m_probability"] / level["u_probability"])
            )  # fmt: skip
            words = plain_label(name, level["label_for_charts"], null=level.get("is_null_level"))
            labels.append(f"when '{index}' then '{_quoted(words)}'")
            weights.append(f"when '{index}' then {round(weight, 3)!r}")
        level_sql = f"case {digit} {' '.join(labels)} end"
        weight_sql = f"case {digit} {' '.join(weights)} end"
        parts.append(f"'{name}', json_object('level', {level_sql}, 'weight', {weight_sql})")
    return f"case when {column} is not null then json_object({', '.join(parts)})::varchar end"


_THINGS = {"name_core": "name", "name_sorted": "words of the name",
           "name_tokens": "words of the name", "street_number": "street number",
           "street_name": "street", "postcode": "postcode",
           "city": "city", "phone": "phone", "website": "website", "name": "name",
           "distance": "coordinates"}  # fmt: skip
_EXACT = re.compile(r"^\(?Exact match on (\w+)\)?$")
_SIMILAR = re.compile(r"^\(?Jaro-Winkler distance of (\w+) >= ([0-9.]+)\)?$")


def plain_label(comparison: str, label: str, *, null: bool | None = None) -> str:
    """A level's label in words a person reads ("the same street", "similar city (0.88 or
    more alike)", "different"), not Splink's or SQL's ("Exact match on street_name",
    "not (latitude_l is not null ...)"); a label already in words is kept."""
    thing = _THINGS.get(comparison, comparison.replace("_", " "))
    text = label.strip()
    if null or text.endswith(" is NULL") or text.startswith("not ("):
        return f"no {thing} on one side or both: not compared"
    if text == "All other comparisons":
        return "farther apart" if comparison == "distance" else f"different {thing}"

    def one(part: str) -> str | None:
        part = part.strip()
        exact, similar = _EXACT.match(part), _SIMILAR.match(part)
        if exact:
            return f"the same {_THINGS.get(exact[1], exact[1])}"
        if similar:
            return f"similar {_THINGS.get(similar[1], similar[1])} ({similar[2]} or more alike)"
        return None

    parts = [one(p) for p in text.split(" OR ")]
    if all(parts):
        return " or ".join(p for p in parts if p)
    return text


def _quoted(text: str) -> str:
    return text.replace("'", "''")


__all__ = [
    "BLOCKING_HARD_RULES",
    "CHAIN_AGREES",
    "CHAIN_FAR",
    "CHAIN_MIN",
    "CONFLICT",
    "EVIDENCE_COLUMNS",
    "FAR_KM",
    "HARD_RULES",
    "MARKS_MACRO",
    "MODEL_PATH",
    "NAMES_ALIKE",
    "STORE_KM",
    "blocked_pair_sql",
    "blocking_rules",
    "comparisons",
    "evidence_json_sql",
    "levels_sql",
    "settings",
]
