"""The Splink model of the fuzzy matching pass: blocking rules, comparisons, hard rules.

The comparisons and blocking rules are defined here; their m and u probabilities were estimated
once with EM (bench/matching_train.py, on generated places) and kept in `model.json` beside this
file, so a run loads fixed parameters: deterministic, and no training time per run.

Hard rules are part of every blocking rule, so a pair breaking one is never even scored:
different countries, different street numbers (two branches on one street among them), or more
than FAR_KM apart, each only when both places have the value.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import splink.comparison_level_library as cll
from splink import SettingsCreator
from splink.blocking_rule_library import CustomRule
from splink.comparison_library import CustomComparison

from placeflow.pipeline.match.features import BLOCKS

if TYPE_CHECKING:
    from splink.internals.comparison_level_creator import ComparisonLevelCreator

    Level = ComparisonLevelCreator | dict[str, Any]

MODEL_PATH = Path(__file__).with_name("model.json")
FAR_KM = 0.5
"""Places farther apart than this (both with coordinates) are never merged."""


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
HARD_RULES = (
    "(l.country is null or r.country is null or l.country = r.country)",
    "(l.street_number is null or r.street_number is null or l.street_number = r.street_number)",
    f"(l.latitude is null or r.latitude is null or {_NEAR})",
)
"""What may never be merged, as SQL over a pair (l, r): each rule must hold."""
NAMES_ALIKE = (
    "(l.name_core is null or r.name_core is null or l.name_sorted = r.name_sorted"
    " or jaro_winkler_similarity(l.name_core, r.name_core) >= 0.88"
    " or len(list_intersect(l.name_tokens, r.name_tokens))"
    " = least(len(l.name_tokens), len(r.name_tokens)))"
)
"""A scored pair (its places l and r) is merged only when the names are alike: two businesses
of one hotel share its street, number and phone, and only their names tell them apart."""


def blocking_rules() -> list[CustomRule]:
    """One rule per blocking key, each with the hard rules attached."""
    rules = " and ".join(HARD_RULES)
    return [CustomRule(f"l.{key} = r.{key} and {rules}") for key in BLOCKS]


def _custom(sql: str, label: str) -> cll.CustomLevel:
    return cll.CustomLevel(sql, label_for_charts=label)


def comparisons() -> list[CustomComparison]:
    """Name, street number, street, postcode, city, phone, website host, distance."""
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
    """A copy of the trained model, safe to hand to a Linker (which may change it)."""
    copied: dict[str, Any] = json.loads(json.dumps(trained_settings()))
    copied.pop("linker_uid", None)
    copied["retain_matching_columns"] = False  # the pass reads ids and probability alone
    return copied


__all__ = [
    "FAR_KM",
    "HARD_RULES",
    "MODEL_PATH",
    "NAMES_ALIKE",
    "blocking_rules",
    "comparisons",
    "settings",
]
