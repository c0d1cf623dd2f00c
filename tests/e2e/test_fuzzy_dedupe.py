"""Fuzzy dedupe end to end: sample restaurants beside perturbed copies of themselves (accents,
typos, suite lines, case and an apostrophe), run against the sandbox on loopback; what the
sandbox billed is one place per cluster, and run_rows says which row each duplicate matched."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from placeflow.cli.main import main
from placeflow.options import RunOptions
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.placekey import place_keys
from placeflow.pipeline.source import FileSource, read

from .conftest import KEY, ServeSandbox, run_flow, write_csv

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("asahi ramen", "baja fresh", "la cachette", "cafe bizou", "campanile",
         "chinois on main", "citrus", "locanda veneta")  # fmt: skip
"""Eight restaurants of the Zagat sample; each gets a perturbed copy the exact key misses."""


def _variant(row: dict[str, str], i: int) -> dict[str, str]:
    v = {**row, "id": row["id"] + "v"}
    match i % 4:
        case 0:  # an accent
            v["name"] = row["name"].replace("a", "á", 1)
        case 1:  # a suite line
            v["addr"] = row["addr"] + " suite 4"
        case 2:  # a typo
            v["name"] = row["name"][:-1]
        case _:  # case, doubled spaces, an apostrophe
            v["name"] = row["name"].title().replace(" ", "  ") + "'s"
    return v


def _input(tmp_path: Path) -> Path:
    """8 originals, their 8 variants, and 2 exact repeats of originals (18 rows, 8 places).
    Variants and repeats carry ids of their own ("2v", "r1"): the file lists one place under
    several ids, so its runs say so (`ids_may_repeat_places`); by default they stay apart."""
    with (ROOT / "data/samples/restaurants_zagat.csv").open(encoding="utf-8") as f:
        picked = [r for r in csv.DictReader(f) if r["name"] in NAMES]
    assert len(picked) == len(NAMES)
    repeats = [{**picked[0], "id": "r1"}, {**picked[5], "id": "r2"}]
    rows = picked + [_variant(r, i) for i, r in enumerate(picked)] + repeats
    return write_csv(tmp_path / "fuzzy.csv", [dict(r) for r in rows])


def _billed(sb: Any) -> list[str]:
    """The rows the sandbox billed, by the id it was sent (the place_key), once each."""
    rows = sb.sandbox.backend.keys[KEY].account.rows_billed
    return sorted(r.removeprefix("enrich:") for r in rows.elements())


def _rows(db: Path, run_id: str) -> pl.DataFrame:
    """run_rows of the run joined to places_latest on place_key, as outside scripts do."""
    with duckdb.connect(str(db), read_only=True) as con:
        frame: pl.DataFrame = con.sql(
            "select r.row_ord, r.source_id, r.place_key, r.disposition, r.matched_row,"
            " r.match_rule, r.match_probability, p.place_key as answered"
            " from run_rows r left join places_latest p using (place_key)"
            " where r.run_id = $run_id order by r.row_ord",
            params={"run_id": run_id},
        ).pl()
    return frame


def _own_key(path: Path, source_id: str) -> str:
    """A row's own exact place_key (as `placeflow not-a-match` takes it)."""
    rows, _ = read(FileSource((str(path),)), RunOptions())
    places, _, _ = normalize(rows)
    keyed = places.with_columns(place_keys(places))
    return str(keyed.filter(pl.col("source_id") == source_id).get_column("place_key").item())


def test_fuzzy_duplicates_are_paid_once_per_cluster(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """Default dedupe: 18 rows, 8 clusters; the sandbox bills 8 places once each; every row
    joins its representative's answer; duplicates record matched row, rule and probability."""
    sb = serve_sandbox()
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(inputs=[str(_input(tmp_path))], db=str(db), ids_may_repeat_places=True)
    assert state == "COMPLETED" and s["status"] == "completed"
    assert (s["rows_read"], s["duplicates"], s["fuzzy_duplicates"], s["submitted"]) == (
        18, 10, 8, 8)  # fmt: skip
    billed = _billed(sb)
    assert len(billed) == len(set(billed)) == s["succeeded"] == sb.credits()["charged"]
    assert s["succeeded"] + s["failed"] == 8
    assert sb.requests("POST /v1/enrich-batch") == 1  # the 8 representatives in one call
    rows = _rows(db, s["run_id"])
    sent = rows.filter(pl.col("disposition") == "submitted")
    assert sent.height == 8 and set(billed) <= set(sent["place_key"])
    assert rows["answered"].null_count() == 0  # every row has its representative's answer
    rep = dict(zip(sent["source_id"], sent["place_key"], strict=True))
    by_id = {r["source_id"]: r for r in rows.iter_rows(named=True)}
    row_of = {r["source_id"]: r["row_ord"] for r in rows.iter_rows(named=True)}
    for source_id, key in rep.items():
        variant = by_id[source_id + "v"]
        assert variant["place_key"] == key and variant["disposition"] == "duplicate"
        assert variant["matched_row"] == row_of[source_id]
        assert variant["match_rule"] == "probabilistic"
        assert 0.99 <= variant["match_probability"] <= 1.0
    for repeat, original in (("r1", rows["source_id"][0]), ("r2", rows["source_id"][5])):
        r = by_id[repeat]
        assert (r["match_rule"], r["match_probability"]) == ("exact", 1.0)
        assert r["matched_row"] == row_of[original] and r["place_key"] == rep[original]
    assert sent["match_rule"].null_count() == 8  # representatives matched nothing


def test_a_pair_marked_not_a_match_is_sent_as_two_places(
    tmp_path: Path, serve_sandbox: ServeSandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run merges a variant into its original; `placeflow not-a-match FILE:ROW FILE:ROW`
    (the rows as the user sees them) parts them; the next run of the file sends the variant
    under its own key (the original's answer is fresh: not bought again)."""
    sb = serve_sandbox()
    db = tmp_path / "wh.duckdb"
    path = _input(tmp_path)
    first, second = _own_key(path, "2"), _own_key(path, "2v")  # asahi ramen, Zagat id 2
    assert first != second
    state, s = run_flow(inputs=[str(path)], db=str(db), ids_may_repeat_places=True)
    assert state == "COMPLETED" and s["fuzzy_duplicates"] == 8
    rows = _rows(db, s["run_id"]).with_row_index("line", offset=1)  # data rows, file order
    merged = rows.filter(pl.col("source_id") == "2v").row(0, named=True)
    original = rows.filter(pl.col("source_id") == "2").row(0, named=True)
    assert merged["disposition"] == "duplicate" and merged["place_key"] == original["place_key"]
    refs = [f"{path}:{merged['line']}", f"{path}:{original['line']}"]
    assert main(["not-a-match", *refs, "--note", "two places", "--db", str(db)]) == 0
    assert first in capsys.readouterr().out
    with duckdb.connect(str(db), read_only=True) as con:
        marked = con.execute("select place_key_a, place_key_b, note from not_a_match").fetchall()
    assert marked == [(min(first, second), max(first, second), "two places")]
    billed_before = set(_billed(sb))
    assert first in billed_before and second not in billed_before
    state, again = run_flow(inputs=[str(path)], db=str(db), ids_may_repeat_places=True)
    assert state == "COMPLETED"
    assert again["submitted"] == 1 and again["fuzzy_duplicates"] == 7
    rows = _rows(db, again["run_id"])
    sent = rows.filter(pl.col("disposition") == "submitted")
    assert sent["place_key"].to_list() == [second] and sent["source_id"].to_list() == ["2v"]
    billed = _billed(sb)
    assert len(billed) == len(set(billed)) and set(billed) - billed_before <= {second}
    assert sb.credits()["charged"] == s["charged"] + again["charged"] == len(billed)


def test_dedupe_exact_sends_every_variant(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """--dedupe exact: only the exact repeats are duplicates; the 16 variants are all sent."""
    sb = serve_sandbox()
    db = tmp_path / "wh.duckdb"
    state, s = run_flow(
        inputs=[str(_input(tmp_path))], db=str(db), dedupe="exact", ids_may_repeat_places=True
    )
    assert state == "COMPLETED"
    assert (s["duplicates"], s["fuzzy_duplicates"], s["submitted"]) == (2, 0, 16)
    assert s["succeeded"] + s["failed"] == 16
    assert len(set(_billed(sb))) == s["succeeded"] == sb.credits()["charged"]
    rows = _rows(db, s["run_id"])
    assert set(rows["match_rule"].drop_nulls()) == {"exact"}
