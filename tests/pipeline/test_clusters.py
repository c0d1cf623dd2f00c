"""The dedupe stage's clusters: audit columns per rule, --dedupe off, not-a-match pairs."""

from __future__ import annotations

import polars as pl

from placeflow.pipeline.dedupe import dedupe

from .test_match import CAFE, DINER, _places

VARIANT = {**DINER, "poi_name": "JOES DINER", "street": "120 Main St Suite 4", "postcode": "1105"}


def _audit(frame: pl.DataFrame) -> list[tuple[object, ...]]:
    cols = ("row_ord", "first_row_ord", "matched_row", "match_rule", "match_probability")
    return [tuple(r) for r in frame.select(cols).iter_rows()]


def test_exact_repeats_record_the_first_row_of_their_key() -> None:
    """--dedupe exact: a repeat matched its key's first row, rule exact, probability 1."""
    places = _places(DINER, CAFE, DINER).drop("place_key")
    out, info = dedupe(places, mode="exact")
    assert _audit(out) == [(0, 0, None, None, None), (1, 1, None, None, None),
                           (2, 0, 0, "exact", 1.0)]  # fmt: skip
    assert (info.duplicates, info.exact_duplicates, info.fuzzy_duplicates) == (1, 1, 0)


def test_off_sends_every_row_under_a_key_of_its_own() -> None:
    """--dedupe off: no duplicates; a repeat's key is its key's with its occurrence number."""
    places = _places(DINER, DINER, DINER).drop("place_key")
    out, info = dedupe(places, mode="off")
    keys = out.get_column("place_key").to_list()
    assert keys[1:] == [keys[0] + "-2", keys[0] + "-3"]
    assert set(out.get_column("disposition")) == {"submitted"} and info.duplicates == 0


def test_fuzzy_members_and_their_repeats_carry_the_representatives_key() -> None:
    """--dedupe fuzzy: a variant matched the original (probabilistic); the variant's exact
    repeat matched the variant's first row (exact); both carry the original's key; a marked
    not-a-match pair stays two places."""
    keyed = _places(DINER, VARIANT, CAFE, VARIANT)
    places = keyed.drop("place_key")
    out, info = dedupe(places, mode="fuzzy")
    audit = _audit(out)
    assert audit[0] == (0, 0, None, None, None) and audit[2] == (2, 2, None, None, None)
    assert audit[1][:4] == (1, 0, 0, "probabilistic") and audit[1][4] >= 0.99  # type: ignore[operator]  # a float here
    assert audit[3] == (3, 0, 1, "exact", 1.0)
    keys = out.get_column("place_key").to_list()
    assert keys[0] == keys[1] == keys[3] != keys[2]
    assert (info.duplicates, info.exact_duplicates, info.fuzzy_duplicates) == (2, 1, 1)
    assert "duplicate of row 1 of t.csv" in str(out.get_column("note")[1])
    a, b = sorted(keyed.get_column("place_key").to_list()[:2])
    pair = pl.DataFrame({"place_key_a": [a], "place_key_b": [b]})
    apart, info = dedupe(places, mode="fuzzy", not_a_match=pair)
    assert (info.duplicates, info.exact_duplicates, info.fuzzy_duplicates) == (1, 1, 0)
    assert apart.get_column("place_key").to_list() == keyed.get_column("place_key").to_list()
