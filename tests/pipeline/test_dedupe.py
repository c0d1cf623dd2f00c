"""Dedupe stage: the place_key's identity rules, its stability, and the fan-out of duplicates."""

from __future__ import annotations

import hashlib
import json
import re

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placeflow.fields import DedupeMode
from placeflow.pipeline import clusters
from placeflow.pipeline.dedupe import (
    dedupe,
    dedupe_staged,
    identity_columns,
    keyed,
    place_key_expr,
    place_keys,
)
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.placekey import (
    STREET_WORDS,
    _words_any,
    _words_ascii,
    identity_text,
)
from placeflow.pipeline.read import read_inputs
from placeflow.pipeline.staging import Staging
from placeflow.state.records import DEDUPED, MATCHED, PLACES
from tests.pipeline.conftest import SAMPLES, places_frame

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def keys(*rows: dict[str, object]) -> list[str]:
    return [str(k) for k in place_keys(places_frame(*rows))]


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    first, second = keys(a, b)
    return first == second


def test_key_is_pk_and_24_hex_digits_of_md5_of_the_identity() -> None:
    """The key is 'pk_' + the first 24 hex digits of standard MD5 of the identity text."""
    frame = places_frame({"poi_name": "Café Bizou", "city": "Sherman Oaks", "latitude": 34.1,
                          "longitude": -118.4})  # fmt: skip
    text = identity_text(identity_columns(frame)).item()
    key = place_keys(frame).item()
    assert re.fullmatch(r"pk_[0-9a-f]{24}", key)
    assert key == "pk_" + hashlib.md5(text.encode()).hexdigest()[:24]


def test_key_of_a_known_place_never_changes() -> None:
    """A pinned identity and key: changing the rules changes every stored key, so be deliberate."""
    frame = places_frame(
        {
            "poi_name": "Arnie Morton's of Chicago",
            "street": "435 S. La Cienega Blv.",
            "city": "Los Angeles",
            "postcode": "90048",
            "country": "US",
        }
    )
    assert identity_text(identity_columns(frame)).item() == (
        "pk1\x1farnie mortons of chicago\x1f435 south la cienega boulevard\x1f\x1flos angeles"
        "\x1f\x1f90048\x1fUS\x1f\x1f"
    )
    assert (
        place_keys(frame).item()
        == "pk_"
        + hashlib.md5(identity_text(identity_columns(frame)).item().encode()).hexdigest()[:24]
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"poi_name": "Joe's Pizza"}, {"poi_name": "JOES  PIZZA!"}),
        ({"poi_name": "Panos & Pauls"}, {"poi_name": "panos and pauls"}),
        ({"poi_name": "The Apple Pan"}, {"poi_name": "apple pan, the"}),
        ({"poi_name": "apple pan  the"}, {"poi_name": "Apple Pan"}),
        ({"poi_name": "Acme Widgets, Inc."}, {"poi_name": "acme widgets llc"}),
        ({"poi_name": "Blue Bottle Coffee Co"}, {"poi_name": "Blue Bottle Coffee"}),
        ({"poi_name": "Ｃａｆé"}, {"poi_name": "café"}),
        ({"poi_name": "A", "street": "435 S. La Cienega Blv."},
         {"poi_name": "A", "street": "435 south la cienega boulevard"}),
        ({"poi_name": "A", "street": "12 N. Main St."},
         {"poi_name": "A", "street": "12 North Main Street"}),
        ({"poi_name": "A", "street": "1 W 58th St"},
         {"poi_name": "A", "street": "1 w. 58th street"}),
        ({"poi_name": "A", "postcode": "sw1a 1aa"}, {"poi_name": "A", "postcode": "SW1A1AA"}),
        ({"poi_name": "A", "city": "St. Louis"}, {"poi_name": "A", "city": "st louis"}),
        ({"poi_name": "A", "latitude": 40.712801, "longitude": -74.006},
         {"poi_name": "A", "latitude": 40.71279, "longitude": -74.00601}),
    ],
)  # fmt: skip
def test_formatting_differences_share_a_key(a: dict[str, object], b: dict[str, object]) -> None:
    """Case, punctuation, &/and, articles, legal forms, abbreviations and ~1 m shifts merge."""
    assert same(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"poi_name": "Apple Pan", "city": "west la"},
         {"poi_name": "Apple Pan", "city": "los angeles"}),
        ({"poi_name": "Dawat", "city": "new york"}, {"poi_name": "Dawat", "city": "new york city"}),
        ({"poi_name": "A", "street": "1 Main St"}, {"poi_name": "A", "street": "2 Main St"}),
        ({"poi_name": "A", "street": "1 Main St"}, {"poi_name": "A"}),
        ({"poi_name": "A", "country": "US"}, {"poi_name": "A", "country": "CA"}),
        ({"poi_name": "A", "latitude": 40.7128, "longitude": -74.0},
         {"poi_name": "A", "latitude": 40.7138, "longitude": -74.0}),
        ({"poi_name": "A", "latitude": 1.0, "longitude": 2.0}, {"poi_name": "A"}),
        ({"poi_name": "Smith & Co"}, {"poi_name": "Smith"}),
        ({"poi_name": "🍕"}, {"poi_name": "🍔"}),
        ({"poi_name": "Café"}, {"poi_name": "Cafe"}),
        ({"poi_name": "The"}, {"poi_name": "Inc"}),
    ],
)  # fmt: skip
def test_real_differences_keep_places_apart(a: dict[str, object], b: dict[str, object]) -> None:
    """Different cities (never guessed equal), numbers, fields present, coordinates stay apart."""
    assert not same(a, b)


def test_dedupe_marks_the_first_row_of_each_key_submitted() -> None:
    """The lowest row_ord of a key is submitted; the others are duplicates pointing at it."""
    frame = places_frame(
        {"poi_name": "Joe's Pizza", "city": "NYC"},
        {"poi_name": "Other"},
        {"poi_name": "JOES PIZZA", "city": "nyc"},
        {"poi_name": "joe\u2019s pizza", "city": "Nyc"},
    )
    out, info = dedupe(frame)
    assert out.select("row_ord", "disposition", "first_row_ord").rows() == [
        (0, "submitted", 0),
        (1, "submitted", 1),
        (2, "duplicate", 0),
        (3, "duplicate", 0),
    ]
    assert out.columns[: frame.width] == frame.columns
    assert (info.places, info.unique, info.duplicates) == (4, 2, 2)


def test_place_key_expr_matches_place_keys() -> None:
    """The expression form gives the same keys as the frame function."""
    frame = places_frame({"poi_name": "A", "city": "B"}, {"poi_name": "c & d"})
    assert frame.select(place_key_expr()).to_series().to_list() == place_keys(frame).to_list()


def test_empty_places_dedupe_to_nothing() -> None:
    """No places: no keys, all counts zero."""
    out, info = dedupe(places_frame())
    assert out.height == 0 and (info.places, info.unique, info.duplicates) == (0, 0, 0)


def test_samples_merge_the_same_restaurant_across_guides() -> None:
    """On the samples 30 Zagat rows merge into Fodor's ones by the exact key (a 31st pair of
    the same fields lists two different phones, so stays apart); neighbourhood spellings stay
    apart."""
    rows, _ = read_inputs([str(SAMPLES / "restaurants_*.csv")])
    places, rejects, _ = normalize(rows)
    out, info = dedupe(places)
    assert (rows.height, rejects.height) == (864, 0)
    assert (info.unique, info.duplicates) == (834, 30)
    by_name = out.filter(pl.col("poi_name").is_in(["arnie mortons of chicago", "panos & pauls",
                                                  "panos and pauls", "dawat"]))  # fmt: skip
    pairs = by_name.group_by("poi_name").agg(pl.col("place_key").n_unique()).sort("poi_name")
    arnie = by_name.filter(pl.col("poi_name") == "arnie mortons of chicago")
    assert arnie.get_column("place_key").n_unique() == 1  # "blv." and "blvd."
    panos = by_name.filter(pl.col("poi_name").str.starts_with("panos"))
    assert panos.get_column("place_key").n_unique() == 1  # "&" and "and"
    dawat = by_name.filter(pl.col("poi_name") == "dawat")
    assert dawat.get_column("place_key").n_unique() == 2  # "new york" vs "new york city"
    assert pairs.height == 4


@pytest.mark.parametrize(("mode", "unique"), [("exact", 834), ("fuzzy", 766), ("off", 864)])
def test_staged_dedupe_of_batches_equals_one_batch(
    mode: DedupeMode, unique: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The samples staged in batches of 100 (and handed to the fuzzy pass 37 at a time) dedupe
    to the DEDUPED one batch gives, whatever the mode; the stage leaves DEDUPED and MATCHED
    alone (PLACES and its own work tables are dropped)."""
    rows, _ = read_inputs([str(SAMPLES / "restaurants_*.csv")])
    places, _, _ = normalize(rows)

    def staged(batches: list[pl.DataFrame]) -> tuple[pl.DataFrame, object, list[str]]:
        with Staging.scratch() as staging, staging.limited():
            for batch in batches:
                staging.append(PLACES, keyed(batch))
            info = dedupe_staged(staging, mode=mode)
            left = staging.query("select table_name from duckdb_tables() order by all")
            return staging.frame(DEDUPED), info, left.get_column("table_name").to_list()

    whole, info, left = staged([places])
    monkeypatch.setattr(clusters, "MATCH_BATCH_ROWS", 37)
    parts, info_parts, _ = staged(list(places.iter_slices(100)))
    assert parts.equals(whole) and info_parts == info
    assert sorted(left) == sorted([DEDUPED, MATCHED])
    assert whole.get_column("row_ord").to_list() == places.get_column("row_ord").to_list()
    assert whole.filter(pl.col("disposition") == "submitted").height == unique


ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=40)


@FAST
@given(st.lists(ascii_text, min_size=1, max_size=20))
def test_ascii_fast_path_equals_the_unicode_path(values: list[str]) -> None:
    """For ASCII text the literal-replacement path gives exactly the full Unicode path's words."""
    frame = pl.DataFrame({"v": values}, schema={"v": pl.String})
    fast = frame.select(_words_ascii(pl.col("v"))).to_series()
    full = frame.select(_words_any(pl.col("v"))).to_series()
    assert fast.to_list() == full.to_list()


names = st.from_regex(r"[A-Za-z][A-Za-z0-9]{1,8}( [A-Za-z0-9]{1,8}){0,3}", fullmatch=True)
abbreviations = st.sampled_from(sorted(STREET_WORDS.items()))


@st.composite
def noisy_pair(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    """A place and the same place written differently (case, spaces, punctuation, &, St, Inc)."""
    name, city = draw(names), draw(names)
    number = draw(st.integers(1, 99999))
    short, long = draw(abbreviations)
    joiner = draw(st.sampled_from([("&", "and"), ("and", "&")]))
    legal = draw(st.sampled_from(["", " Inc", " LLC", ", Ltd.", " Co"]))
    clean = {"poi_name": f"{name} {joiner[0]} Sons", "street": f"{number} {short} Main",
             "city": city}  # fmt: skip
    noisy = {
        "poi_name": f"  {name.upper()}  {joiner[1]} sons{legal}",
        "street": f"{number}  {long.title()}. main.",
        "city": f"{city.lower()}.",
    }
    return clean, noisy


@FAST
@given(noisy_pair())
def test_place_key_is_stable_under_formatting_noise(pair: tuple[dict[str, object], ...]) -> None:
    """A place and its rewrite (case, spaces, punctuation, &/and, St/Street, Inc) share a key."""
    assert same(*pair)


places_rows = st.lists(
    st.fixed_dictionaries(
        {
            "poi_name": st.sampled_from(["A", "a.", "The A", "B & C", "b and c", "🍕", "\uff21"]),
            "street": st.sampled_from([None, "1 Main St", "1 main street", "2 Main St"]),
            "city": st.sampled_from([None, "X", "x", "Y"]),
            "latitude": st.sampled_from([None, 1.0, 1.00001]),
            "longitude": st.sampled_from([None, 2.0]),
        }
    ),
    max_size=30,
)


@settings(FAST, max_examples=15)  # two dedupes (fuzzy pass included) per example: ~0.3 s each
@given(places_rows)
def test_dedupe_keeps_every_row_once_and_is_idempotent(data: list[dict[str, object]]) -> None:
    """Every row comes out once, in order, one submitted per key; a second pass changes nothing."""
    frame = places_frame(*data)
    once, info = dedupe(frame)
    twice, info_again = dedupe(once)
    assert once.get_column("row_ord").to_list() == list(range(len(data)))
    assert twice.equals(once) and info_again == info
    submitted = once.filter(pl.col("disposition") == "submitted")
    assert submitted.get_column("place_key").is_unique().all()
    assert submitted.height == info.unique == once.get_column("place_key").n_unique()


def test_separator_inside_a_value_cannot_shift_fields() -> None:
    """Control characters (the U+001F separator among them) never reach the hashed identity."""
    frame = places_frame(
        {"poi_name": "A", "postcode": "1\x1fUS"},
        {"poi_name": "\x1f\x1f"},
        {"poi_name": "A", "city": "x\x1fy"},
    )
    assert all(text.count("\x1f") == 9 for text in identity_text(identity_columns(frame)))


def test_own_keys_and_the_evidence_of_each_fuzzy_merge_are_kept() -> None:
    """On the samples: every row keeps its own key (own_key), which a merged row differs from
    its answering place_key in; MATCHED holds each merged place with the pair's probability
    and its evidence, every comparison's level and match weight."""
    rows, _ = read_inputs([str(SAMPLES / "restaurants_*.csv")])
    places, _, _ = normalize(rows)
    with Staging.scratch() as staging, staging.limited():
        staging.append(PLACES, keyed(places))
        dedupe_staged(staging, mode="fuzzy")
        deduped, matched = staging.frame(DEDUPED), staging.query(f"select * from {MATCHED}")
    assert deduped.get_column("own_key").null_count() == 0
    fuzzy = deduped.filter(pl.col("match_rule") == "probabilistic")
    assert fuzzy.height == matched.height == 68
    assert (fuzzy.get_column("own_key") != fuzzy.get_column("place_key")).all()
    alone = deduped.filter(pl.col("match_rule").is_null())
    assert (alone.get_column("own_key") == alone.get_column("place_key")).all()
    assert set(fuzzy.get_column("own_key")) == set(matched.get_column("place_key"))
    assert matched.get_column("match_probability").min() >= 0.99  # type: ignore[operator]  # a float
    evidence = [json.loads(e) for e in matched.get_column("evidence")]
    names = {"name", "street_number", "street_name", "postcode", "city", "phone", "website",
             "distance"}  # fmt: skip
    assert all(set(e) == names and all("level" in v and "weight" in v for v in e.values())
               for e in evidence)  # fmt: skip
    assert matched.get_column("matched_run_id").null_count() == matched.height  # none known
