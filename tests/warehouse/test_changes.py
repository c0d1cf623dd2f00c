"""Change history: place_changes against the sandbox's ground truth, noise rules, history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from placeflow.fields import JobKind
from placeflow.pipeline.changes import record_changes
from placeflow.store.warehouse import connect
from tests.warehouse.dataset import load
from tests.warehouse.helpers import add_run, attribute, enrich_line, plan_chunk, write_lines
from tests.warehouse.sandbox_runs import (
    Runs,
    changed_fields,
    run_places,
    sandbox_answer,
    sent_requests,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Enrich at epoch 0, enrich again at epoch 1, validate at epoch 1, enrich at epoch 1;
    each run records its changes itself (its account stage)."""
    db = tmp_path_factory.mktemp("changes") / "wh.duckdb"
    runs: list[tuple[str, int, JobKind, datetime]] = [
        ("r1", 0, "enrich", T0),
        ("r2", 1, "enrich", T0 + 40 * DAY),
        ("r3", 1, "validate", T0 + 41 * DAY),
        ("r4", 1, "enrich", T0 + 42 * DAY),
    ]
    ids = {label: run_places(db, epoch=e, mode=mode, now=at) for label, e, mode, at in runs}
    con = connect(db)
    yield Runs(con, ids)
    con.close()


def test_changes_match_the_sandbox_ground_truth(refreshed: Runs) -> None:
    """place_changes lists exactly the places and fields the sandbox's epoch changed
    (precision and recall 1.0), and about 5% of places changed."""
    r2 = refreshed.ids["r2"]
    requests = sent_requests(refreshed.con, r2)
    truth = changed_fields(requests)
    found = {
        (str(k), str(f))
        for k, f in refreshed.con.execute(
            "select place_key, field from place_changes where run_id = ?", [r2]
        ).fetchall()
    }
    assert found == truth
    places = {k for k, _ in truth}
    assert 0.02 * len(requests) < len(places) < 0.09 * len(requests)


def test_change_values_are_the_sandbox_answers(refreshed: Runs) -> None:
    """Each phone change carries the numbers the sandbox gave at epoch 0 and epoch 1."""
    r2 = refreshed.ids["r2"]
    requests = sent_requests(refreshed.con, r2)
    rows = refreshed.con.execute(
        "select place_key, old_value, new_value, old_run_id, kind from place_changes"
        " where run_id = ? and field = 'phone'",
        [r2],
    ).fetchall()
    assert rows
    for key, old, new, old_run, kind in rows:
        epochs = [sandbox_answer(requests[key], mode="enrich", epoch=e) for e in (0, 1)]
        numbers = [(a["attributes"]["phone"]["value"] or {}).get("number") for a in epochs]
        assert [old, new] == numbers
        assert (old_run, kind) == (refreshed.ids["r1"], "phone")


def test_status_changes_are_named(refreshed: Runs) -> None:
    """operational_status changes carry a kind that follows from their values."""
    rows = refreshed.con.execute(
        "select old_value, new_value, kind from place_changes where field = 'operational_status'"
    ).fetchall()
    assert rows
    for old, new, kind in rows:
        expected = {"closed": {"closed", "moved"}, "not_exists": {"not_exists"}}.get(
            new, {"reopened"} if new == "open" and old in ("closed", "not_exists") else {"verdict"}
        )
        assert kind in expected


def test_a_repeat_answer_and_a_validation_change_nothing(refreshed: Runs) -> None:
    """The same epoch again (r4), and a validation at that epoch (r3), record no change."""
    counts = dict(
        refreshed.con.execute(
            "select run_id, count(*) from place_changes group by run_id"
        ).fetchall()
    )
    assert set(counts) == {refreshed.ids["r2"]}


def test_recording_twice_adds_nothing(refreshed: Runs) -> None:
    """record_changes is idempotent: a call for a run that recorded its changes inserts no
    row."""
    con = refreshed.con
    before = con.execute("select count(*), min(detected_at) from place_changes").fetchall()
    info = record_changes(con, refreshed.ids["r2"], now=T0 + 100 * DAY)
    assert info.inserted == 0
    assert info.changes == before[0][0]
    assert con.execute("select count(*), min(detected_at) from place_changes").fetchall() == before


def test_history_answers_what_was_known_on_a_date(refreshed: Runs) -> None:
    """place_history has a second version exactly for changed places; one query per date
    gives the epoch-0 phone before the refresh and the epoch-1 phone after."""
    con = refreshed.con
    changed = {
        str(k) for (k,) in con.execute("select distinct place_key from place_changes").fetchall()
    }
    versioned = {
        str(k)
        for (k,) in con.execute("select place_key from place_history where version = 2").fetchall()
    }
    assert versioned == changed
    assert con.execute("select max(version) from place_history").fetchall() == [(2,)]
    as_of = (
        "select phone from place_history where place_key = ? and valid_from <= ?"
        " and (valid_to is null or ? < valid_to)"
    )
    key, old, new = con.execute(
        "select place_key, old_value, new_value from place_changes where field = 'phone'"
        " order by place_key limit 1"
    ).fetchall()[0]
    for when, phone in ((T0 + 10 * DAY, old), (T0 + 45 * DAY, new)):
        assert con.execute(as_of, [key, when, when]).fetchall() == [(phone,)]


# --- noise rules, on hand-made outcomes -------------------------------------------------------


def _enrich(
    con: duckdb.DuckDBPyConnection,
    tmp: Path,
    run_id: str,
    at: datetime,
    lines: dict[str, dict[str, Any]],
    requests: dict[str, str] | None = None,
) -> None:
    add_run(con, run_id, "enrich", created_at=at)
    keys = list(lines)
    plan_chunk(
        con,
        run_id,
        0,
        keys,
        attributes=["opening_hours", "phone", "website", "existence", "open_closed"],
    )
    if requests:
        for key, request in requests.items():
            con.execute(
                "update run_places set request = ? where run_id = ? and place_key = ?",
                [request, run_id, key],
            )
    load(
        con,
        run_id,
        0,
        "enrich",
        write_lines(tmp / f"{run_id}.jsonl.gz", lines.values()),
        "job",
        len(keys),
        now=at,
    )


def _located(key: str, lat: float, lon: float) -> str:
    return json.dumps(
        {
            "id": key,
            "poi_name": f"Place {key}",
            "latitude": lat,
            "longitude": lon,
            "attributes": ["opening_hours", "phone", "website", "existence", "open_closed"],
        }
    )


def test_noise_is_no_change(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """Confidence moves, phone formatting, www./scheme/trailing slash, reordered hours and a
    3 m coordinate shift are no change; an 80 m move and a new phone are."""
    hours = {"days": {"monday": [{"open": "09:00", "close": "17:00"}], "sunday": "closed"}}
    hours_reordered = {
        "days": {"sunday": "closed", "monday": [{"close": "17:00", "open": "09:00"}]}
    }
    first = enrich_line("A", status={"existence_confidence": 0.91})
    first["attributes"] = {
        "opening_hours": attribute(hours),
        "phone": attribute({"number": "+14155550100"}),
        "website": attribute({"url": "https://www.example.com/menu/"}),
    }
    second = enrich_line("A", status={"existence_confidence": 0.93})
    second["attributes"] = {
        "opening_hours": attribute(hours_reordered, confidence="low"),
        "phone": attribute({"number": "+1 (415) 555-0100"}),
        "website": attribute({"url": "http://example.com/menu"}),
    }
    moved = enrich_line("B")
    newer = dict(enrich_line("B"))
    newer["attributes"] = dict(newer["attributes"]) | {
        "phone": attribute({"number": "+14155550199"})
    }
    _enrich(
        con,
        tmp_path,
        "n1",
        T0,
        {"A": first, "B": moved, "C": enrich_line("C")},
        {"A": _located("A", 37.0, -122.0), "C": _located("C", 37.0, -122.0)},
    )
    _enrich(
        con,
        tmp_path,
        "n2",
        T0 + DAY,
        {"A": second, "B": newer, "C": enrich_line("C")},
        {"A": _located("A", 37.00002, -122.00002), "C": _located("C", 37.0005, -122.0005)},
    )
    record_changes(con, "n2", now=T0 + DAY)
    rows = con.execute(
        "select place_key, field, kind, old_value, new_value from place_changes"
        " order by place_key, field"
    ).fetchall()
    assert rows == [
        ("B", "phone", "phone", "+14155550100", "+14155550199"),
        ("C", "coordinates", "moved", "37.000000,-122.000000", "37.000500,-122.000500"),
    ]


def test_a_failed_outcome_neither_changes_nor_hides(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A failed outcome records nothing; the next good one is compared with the last good one."""
    later = enrich_line("A")
    later["attributes"] = dict(later["attributes"]) | {
        "phone": attribute({"number": "+14155550199"})
    }
    _enrich(con, tmp_path, "f1", T0, {"A": enrich_line("A")})
    _enrich(con, tmp_path, "f2", T0 + DAY, {"A": enrich_line("A", success=False)})
    _enrich(con, tmp_path, "f3", T0 + 2 * DAY, {"A": later})
    infos = [record_changes(con, r, now=T0 + 3 * DAY) for r in ("f1", "f2", "f3")]
    assert [i.changes for i in infos] == [0, 0, 1]
    assert infos[2].places_compared == 1
    assert con.execute("select run_id, old_run_id, field from place_changes").fetchall() == [
        ("f3", "f1", "phone")
    ]
