"""The fuzzy matching pass: hard rules, a small perturbed set, not-a-match, determinism."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from placeflow.pipeline.match import fuzzy_match, fuzzy_match_batches
from placeflow.pipeline.match.features import BLOCKS, MAX_BLOCK, capped_blocks_sql, features
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.placekey import place_keys

ROOT = Path(__file__).resolve().parents[2]


def _places(*rows: dict[str, Any]) -> pl.DataFrame:
    fields = ("poi_name", "street", "address", "city", "region", "postcode", "country",
              "latitude", "longitude", "phone", "website")  # fmt: skip
    raw = pl.DataFrame(
        [{"row_ord": i, "source_file": "t.csv", "source_row": i + 1, "source_id": None,
          **{f: (None if r.get(f) is None else str(r[f])) for f in fields}}
         for i, r in enumerate(rows)],
        schema={"row_ord": pl.Int64, "source_file": pl.String, "source_row": pl.Int64,
                "source_id": pl.String, **dict.fromkeys(fields, pl.String)},
    )  # fmt: skip
    places, _, _ = normalize(raw)
    return places.with_columns(place_keys(places))


def _merged(places: pl.DataFrame, **kw: Any) -> set[tuple[int, int]]:
    return _pairs(places, fuzzy_match(places, **kw)[0])


def _pairs(places: pl.DataFrame, matched: pl.DataFrame) -> set[tuple[int, int]]:
    """(row_ord of a merged place, row_ord of the place answering its cluster)."""
    by_key = dict(zip(places["place_key"], places["row_ord"], strict=True))
    return {
        (by_key[k], by_key[c]) for k, c in matched.select("place_key", "cluster_key").iter_rows()
    }


DINER = {"poi_name": "Joe's Diner", "street": "120 Main Street", "city": "Springfield",
         "postcode": "01105", "country": "US"}  # fmt: skip
CAFE = {"poi_name": "Blue Bottle Cafe", "street": "9 Harbor Road", "city": "Portland",
        "postcode": "04101", "country": "US"}  # fmt: skip


def test_variants_of_one_place_merge_into_the_first() -> None:
    """Abbreviations, case, accents, a suite line and a dropped ZIP zero still merge."""
    places = _places(DINER, {**DINER, "poi_name": "JOES DINER", "street": "120 Main St Suite 4",
                             "postcode": "1105"}, CAFE, {**CAFE, "poi_name": "Blue Bottle Café",
                             "street": "9 Harbor Rd"})  # fmt: skip
    matched, info = fuzzy_match(places)
    assert _pairs(places, matched) == {(1, 0), (3, 2)}
    assert matched["match_rule"].to_list() == ["probabilistic"] * 2
    assert matched["match_probability"].min() >= info.threshold  # type: ignore[operator]  # a float here


def test_different_street_numbers_never_merge() -> None:
    """Two branches of a chain on one street (same name, another number) stay apart."""
    assert _merged(_places(DINER, {**DINER, "street": "480 Main Street"})) == set()


def test_different_countries_never_merge() -> None:
    """The same name, street and city in another country stays apart."""
    assert _merged(_places(DINER, {**DINER, "country": "CA"})) == set()


def test_places_far_apart_never_merge() -> None:
    """Same name and city, but coordinates over 500 m apart: not merged; 20 m apart: merged."""
    a = {"poi_name": "Gleim Field", "city": "Gainesville", "country": "US",
         "latitude": 29.7027, "longitude": -82.37}  # fmt: skip
    b = {"poi_name": "Lake Wauburg Landing", "city": "Micanopy", "country": "US",
         "latitude": 29.5252, "longitude": -82.3031}  # fmt: skip
    far = {**a, "poi_name": "Gleim Fied", "latitude": 29.7107}
    near = {**b, "poi_name": "Lake Wauburg Landng", "latitude": 29.5254}
    assert _merged(_places(a, far, b, near)) == {(3, 2)}


def test_chained_matches_never_join_different_numbers() -> None:
    """A place without a number matching two numbered ones does not join those two."""
    places = _places(
        DINER, {**DINER, "street": "Main Street"}, {**DINER, "street": "122 Main Street"}
    )
    pairs = _merged(places)
    clusters: dict[int, set[int]] = {}
    for member, rep in pairs:
        clusters.setdefault(rep, {rep}).add(member)
    assert not any({0, 2} <= c for c in clusters.values())


def test_not_a_match_pairs_are_respected() -> None:
    """A pair marked not-a-match is never merged; the same variant, unmarked, is."""
    other = {**DINER, "city": "Shelbyville", "postcode": "01200"}
    places = _places(DINER, {**DINER, "poi_name": "JOES DINER (Downtown)"},
                     other, {**other, "poi_name": "JOES DINER (Downtown)"})  # fmt: skip
    keys = places["place_key"].to_list()
    marked = pl.DataFrame({"place_key_a": [keys[1]], "place_key_b": [keys[0]]})
    matched, info = fuzzy_match(places, not_a_match=marked)
    assert _pairs(places, matched) == {(3, 2)}
    assert info.not_a_match_pairs == 1


def _eval_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "matching_eval", ROOT / "bench" / "matching_eval.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["matching_eval"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def small_set() -> pl.DataFrame:
    """A small perturbed labelled set (seed 3, 300 airports plus the Fodor's restaurants)."""
    built: pl.DataFrame = _eval_module().build(3, 300)
    return built


def test_small_perturbed_set_reaches_the_targets(small_set: pl.DataFrame) -> None:
    """On a perturbed set the default threshold gives precision >= 0.995 and recall >= 0.9."""
    result = sys.modules["matching_eval"].score(small_set, threshold=0.99, phone=False)
    assert result["fuzzy"]["precision"] >= 0.995
    assert result["fuzzy"]["recall"] >= 0.9


def test_output_is_deterministic(small_set: pl.DataFrame) -> None:
    """Two runs on the same places give the same rows, in the same order."""
    places = sys.modules["matching_eval"]._normalised(small_set, phone=False)
    unique = places.sort("row_ord").unique("place_key", keep="first", maintain_order=True)
    first, _ = fuzzy_match(unique)
    second, _ = fuzzy_match(unique)
    assert first.height > 0 and first.equals(second)


def _unique(small_set: pl.DataFrame) -> pl.DataFrame:
    places = sys.modules["matching_eval"]._normalised(small_set, phone=False)
    return places.sort("row_ord").unique("place_key", keep="first", maintain_order=True)


def test_places_in_batches_match_as_one_frame(small_set: pl.DataFrame) -> None:
    """Handed in batches of 97, the pass finds the same merges, with the same representatives
    and probabilities, from the same candidate pairs as over the whole frame."""
    unique = _unique(small_set)
    whole, info = fuzzy_match(unique)
    parts, info_parts = fuzzy_match_batches(unique.iter_slices(97))
    assert whole.height > 100 and parts.equals(whole)
    assert info_parts == info


def test_blocks_are_capped_over_every_batch() -> None:
    """A block spread over several batches is capped by its whole size: the pass's SQL cap
    over batch-wise keys gives exactly the keys `features` caps over one frame."""
    chain = [
        {"poi_name": f"Blue Bottle {i}", "street": f"{i} Market Street", "city": "Oakland",
         "postcode": f"946{i % 90:02d}", "country": "US", "phone": "(510) 555-0100",
         "website": "https://bluebottle.example/"}
        for i in range(MAX_BLOCK + 5)
    ]  # fmt: skip
    diner = {**DINER, "phone": "413-555-0100"}
    places = _places(*chain, diner, CAFE, {**diner, "poi_name": "JOES DINER"})
    whole = features(places)
    assert whole.get_column("b_city_tok").null_count() >= MAX_BLOCK + 1  # the chain's block
    phones = whole.get_column("phone").to_list()
    assert phones[: MAX_BLOCK + 5] == [None] * (MAX_BLOCK + 5) and phones[-1] == "135550100"
    con = duckdb.connect()
    parts = pl.concat(
        features(batch, first_id=i * 10, capped=False)
        for i, batch in enumerate(places.iter_slices(10))
    )
    assert parts.get_column("b_city_tok").null_count() == 0  # uncapped in each batch
    con.register("raw", parts.to_arrow())
    capped = con.sql(f"{capped_blocks_sql('raw')} order by match_id").pl()
    for key in (*BLOCKS, "phone", "website"):
        assert capped.get_column(key).to_list() == whole.get_column(key).to_list(), key


def test_a_phone_or_site_held_by_many_places_is_no_evidence() -> None:
    """Two listings of a café with one phone number merge (their cities are spelt apart); three
    branches sharing a head-office number and the brand's site are left apart."""
    cafe = {"poi_name": "Blue Bottle Coffee", "city": "Oakland", "country": "US",
            "phone": "(510) 555-0100", "website": "https://bluebottle.example/oakland"}  # fmt: skip
    two = _places(cafe, {**cafe, "city": "Oakland CA", "phone": "510-555-0100"})
    assert _merged(two) == {(1, 0)}
    assert _merged(_places(cafe, {**cafe, "city": "Oakland CA"}, {**cafe, "city": "Oakland, CA"}))\
        == set()  # fmt: skip


def test_each_merge_keeps_a_level_a_comparison_rendered_with_the_model_s_label_and_weight() -> None:
    """The pass hands back a digit a comparison (the level's index in the trained model), and
    `evidence_json_sql` renders every level of every comparison with that level's label in
    words (no column name, no SQL) and match weight (log2 m/u; 0 for the null level)."""
    import json
    import math

    from placeflow.pipeline.match.model import MODEL_PATH, evidence_json_sql, plain_label

    comparisons = json.loads(MODEL_PATH.read_text(encoding="utf-8"))["comparisons"]
    assert all(len(c["comparison_levels"]) <= 10 for c in comparisons)  # a digit each
    places = _places(
        {"poi_name": "Blue Door Cafe", "street": "12 Main Street", "city": "Springfield",
         "postcode": "12345", "country": "US", "phone": "+1 555 0100"},
        {"poi_name": "Blue Door Café", "street": "12 Main St", "city": "Springfield",
         "postcode": "12345", "country": "US", "phone": "+1 555 0100"},
    )  # fmt: skip
    (levels,) = fuzzy_match(places)[0].get_column("levels").to_list()
    assert len(levels) == len(comparisons) and levels.isdigit()
    by_name = {c["output_column_name"]: c for c in comparisons}
    phone = next(i for i, c in enumerate(comparisons) if c["output_column_name"] == "phone")
    assert by_name["phone"]["comparison_levels"][int(levels[phone])]["label_for_charts"] == (
        "Exact match on phone"
    )
    width = max(len(c["comparison_levels"]) for c in comparisons)
    codes = ["".join(str(min(i, len(c["comparison_levels"]) - 1)) for c in comparisons)
             for i in range(width)]  # fmt: skip
    with duckdb.connect() as con:  # its own: the module's default connection outlives the test
        sql = f"select {evidence_json_sql('code')} as e from (select unnest(?) as code)"
        rendered = con.execute(sql, [codes]).fetchall()
        nothing = con.execute(f"select {evidence_json_sql('null::varchar')}").fetchall()
    assert nothing == [(None,)]
    for code, (text,) in zip(codes, rendered, strict=True):
        for (name, said), digit in zip(json.loads(text).items(), code, strict=True):
            level = by_name[name]["comparison_levels"][int(digit)]
            weight = 0.0 if level.get("is_null_level") else math.log2(
                level["m_probability"] / level["u_probability"])  # fmt: skip
            words = plain_label(name, level["label_for_charts"], null=level.get("is_null_level"))
            assert said["level"] == words and "_l " not in words and "NULL" not in words
            assert said["weight"] == pytest.approx(weight, abs=1e-3)


def test_a_small_pass_with_no_pair_in_a_block_imports_no_splink() -> None:
    """Places no two of which share a block (the blocking rules' own SQL, asked of DuckDB)
    are scored without Splink: nothing merges, no candidate is counted, and a fresh process
    never imports it; a small pass with a pair in a block still scores it with Splink."""
    import subprocess

    code = (
        "import sys\n"
        "from tests.pipeline.test_match import CAFE, DINER, _places\n"
        "from placeflow.pipeline.match import fuzzy_match\n"
        "matched, info = fuzzy_match(_places(DINER, CAFE))\n"
        "assert matched.height == 0 and info.candidate_pairs == 0, info\n"
        "print('splink' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
    variant = {**DINER, "poi_name": "JOES DINER", "street": "120 Main St"}
    matched, info = fuzzy_match(_places(DINER, CAFE, variant))
    assert info.candidate_pairs >= 1 and matched.height == 1


def test_a_tiny_pass_opens_no_duckdb_only_when_duckdb_would_find_no_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tiny.may_pair` (polars, uncapped blocks, countries and street numbers) says yes to
    every set of places in which the pass's own DuckDB finds a candidate pair; a tiny pass it
    says no to opens no DuckDB and counts what the full pass counts."""
    import tempfile

    from placeflow.pipeline.match import engine, tiny

    other_number = {**DINER, "poi_name": "Joe's Diner Two", "street": "122 Main Street"}
    elsewhere = {**DINER, "country": "CA"}
    variant = {**DINER, "poi_name": "JOES DINER", "street": "120 Main St"}
    sets = [(DINER, CAFE), (DINER, other_number), (DINER, elsewhere, CAFE),
            (DINER, CAFE, variant), (DINER, {**DINER, "street": None})]  # fmt: skip
    for rows in sets:
        batch = _places(*rows).with_columns(pl.lit(False).alias("known"))
        with tempfile.TemporaryDirectory() as spill:
            con = engine._connect(spill)
            engine._stage(con, [batch], ids_may_repeat=False)
            found = engine._any_candidate(con)
            con.close()
        assert tiny.may_pair([batch]) == found, rows
    assert not tiny.may_pair([_places(DINER, other_number)])

    def no_duckdb(spill: str) -> duckdb.DuckDBPyConnection:
        raise AssertionError("a tiny pass with no pair opened a DuckDB")

    monkeypatch.setattr(engine, "_connect", no_duckdb)
    matched, info = fuzzy_match(_places(DINER, CAFE, other_number))
    assert matched.height == 0 and (info.places, info.candidate_pairs) == (3, 0)
