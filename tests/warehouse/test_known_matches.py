"""A new run's places are matched against the places earlier runs sent: a second file's fuzzy
duplicate of a known fresh place costs nothing, and every merge is recorded with its evidence."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb

import placeflow
from placeflow.emulator import Sandbox
from placeflow.options import RunOptions
from tests.sandbox_target import served

KEY = "pf_test_known_matches"
FIELDS = ("id", "name", "addr", "city", "phone")


def _csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


FODORS = [
    {"id": "534", "name": "21 club", "addr": "21 w. 52nd st.", "city": "new york",
     "phone": "212/582-7200"},
    {"id": "535", "name": "arts delicatessen", "addr": "12224 ventura blvd.",
     "city": "studio city", "phone": "818/762-1221"},
]  # fmt: skip
ZAGAT = [
    {"id": "219", "name": "21 Club", "addr": "21 W. 52nd Street", "city": "new york city",
     "phone": "212-582-7200"},
    {"id": "2", "name": "asahi ramen", "addr": "2027 sawtelle blvd.", "city": "west la",
     "phone": "310-479-2231"},
]  # fmt: skip


def _billed(sandbox: Sandbox) -> list[str]:
    """The ids (place keys) the sandbox billed, once per billing."""
    rows = sandbox.backend.keys[KEY].account.rows_billed
    return sorted(r.split(":", 1)[1] for r in rows.elements())


def test_a_known_fresh_place_costs_nothing_whatever_file_brings_it(tmp_path: Path) -> None:
    """Fodor's then Zagat, one run each into one warehouse: Zagat's spelling of a Fodor's
    restaurant is skipped_fresh with outcome_key the known place's key (its own key kept in
    own_key, never sent to the sandbox), and run_matches records the merge, its earlier run and
    its evidence; the new restaurant alone is bought."""
    db = tmp_path / "wh.duckdb"
    first_file = _csv(tmp_path / "fodors.csv", FODORS)
    second_file = _csv(tmp_path / "zagat.csv", ZAGAT)
    with served(KEY) as (sandbox, target):
        first = placeflow.run([str(first_file)], options=RunOptions(), db=db, target=target)
        bought_first = _billed(sandbox)
        second = placeflow.run([str(second_file)], options=RunOptions(), db=db, target=target)
        bought = _billed(sandbox)
    assert len(bought_first) == 2 and first.submitted == 2
    assert (second.submitted, second.skipped_fresh) == (1, 1)
    assert len(bought) == 3  # the new restaurant only
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select source_id, place_key, own_key, disposition, outcome_key, match_rule"
            " from run_rows where run_id = ? order by row_ord",
            [second.run_id],
        ).fetchall()
        known_key = con.execute(
            "select place_key from run_rows where run_id = ? and source_id = '534'",
            [first.run_id],
        ).fetchall()[0][0]
        matches = con.execute(
            "select row_ord, own_key, answer_key, matched_key, matched_row, matched_run_id,"
            " match_rule, match_probability, evidence from run_matches where run_id = ?",
            [second.run_id],
        ).fetchall()
    (sid, key, own, disposition, outcome, rule), new = rows
    assert (sid, key, disposition, outcome, rule) == (
        "219", known_key, "skipped_fresh", known_key, "probabilistic")  # fmt: skip
    assert own != known_key and own not in bought and known_key in bought_first
    assert new[1] == new[2] and new[3] == "submitted"  # a place of its own: own_key = place_key
    ((row_ord, m_own, answer, matched, m_row, m_run, m_rule, p, evidence),) = matches
    assert (row_ord, m_own, answer, matched, m_row, m_run, m_rule) == (
        0, own, known_key, known_key, None, first.run_id, "probabilistic")  # fmt: skip
    assert p >= 0.99
    scored = json.loads(evidence)
    assert scored["phone"]["level"] == "the same phone" and scored["phone"]["weight"] > 0
    assert set(scored) >= {"name", "street_number", "street_name", "city", "phone"}
