"""Explain and undo a merge: `placeflow matches RUN` lists what the fuzzy dedupe merged with its
evidence, `placeflow not-a-match FILE:ROW FILE:ROW` marks the pair by what the user sees, and a
later run keeps the two apart and buys the place that was merged away (the sandbox is sent it);
a reference no row answers exits 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import placeflow
from placeflow.cli.main import main
from placeflow.options import RunOptions
from tests.sandbox_target import served

KEY = "sk_undo_paid_key_4d4d"
ROWS = [
    {"id": "s1", "name": "Locanda Veneta", "addr": "8638 W. Third St.", "city": "Los Angeles",
     "country": "US", "phone": "310-274-1893"},
    {"id": "s2", "name": "Locanda Venetta", "addr": "8638 W Third Street", "city": "Los Angeles",
     "country": "US", "phone": "310/274-1893"},
    {"id": "s3", "name": "Campanile", "addr": "624 S. La Brea Ave.", "city": "Los Angeles",
     "country": "US", "phone": "213-938-1447"},
]  # fmt: skip
"""Two spellings of one restaurant (its number, the same phone) and another one; the file's
ids differ for the two spellings, so its runs say the file may list one place twice."""
REPEATS = RunOptions(ids_may_repeat_places=True)


def write(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(ROWS[0]))
        writer.writeheader()
        writer.writerows(ROWS)
    return path


def test_a_merge_is_listed_with_its_evidence_and_undone_by_file_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fuzzy pass merges row 2 into row 1 (the sandbox is sent 2 places); `matches` lists
    the pair with both rows' file:row and ids and per-comparison evidence; `not-a-match
    places.csv:1 places.csv:2` marks it; a later forced run of the same file sends 3 places."""
    csv_path, db = write(tmp_path / "places.csv"), tmp_path / "wh.duckdb"
    with served(KEY, fail_rate=0.0) as (sandbox, target):
        first = placeflow.run([str(csv_path)], db=db, target=target, options=REPEATS)
        assert (first.rows_read, first.duplicates, first.submitted) == (3, 1, 2)
        assert main(["matches", first.run_id, "--db", str(db), "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        (merge,) = listed["merges"]
        assert (merge["source_row"], merge["source_id"]) == (2, "s2")
        assert (merge["matched_source_row"], merge["matched_id"]) == (1, "s1")
        evidence = merge["evidence"]  # an object, not JSON text inside the JSON
        assert evidence and all({"level", "weight"} <= set(e) for e in evidence.values())
        levels = [e["level"] for e in evidence.values()]
        assert not [w for w in levels if "_l " in w or "NULL" in w or "Jaro" in w], levels
        out = tmp_path / "m.csv"
        assert main(["matches", first.run_id, "--db", str(db), "--out", str(out)]) == 0
        assert out.read_text().count("\n") == 2  # the header and the merge
        capsys.readouterr()
        assert main(["not-a-match", "places.csv:1", "places.csv:2", "--db", str(db), "--json"]) == 0
        marked = json.loads(capsys.readouterr().out)
        assert [r["source_id"] for r in marked["rows"]] == ["s1", "s2"]
        sent_before = sum(sandbox.backend.keys[KEY].account.rows_billed.values())
        again = placeflow.run([str(csv_path)], db=db, target=target, options=RunOptions(force=True))
        billed = sum(sandbox.backend.keys[KEY].account.rows_billed.values()) - sent_before
    assert (again.duplicates, again.submitted) == (0, 3)
    assert billed == 3  # the place merged away before is bought now, apart


def test_an_unknown_reference_exits_2_and_marks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FILE:ROW, id or key no row answers is refused with exit code 2, naming the forms a
    reference takes; the same place twice is refused too; not_a_match stays empty."""
    csv_path, db = write(tmp_path / "places.csv"), tmp_path / "wh.duckdb"
    with served(KEY, fail_rate=0.0) as (_, target):
        placeflow.run([str(csv_path)], db=db, target=target, options=REPEATS)
    for a, b in (("places.csv:1", "places.csv:9"), ("id:s1", "id:nope"), ("pk_nope", "id:s1")):
        assert main(["not-a-match", a, b, "--db", str(db)]) == 2
        assert "FILE:ROW" in capsys.readouterr().err
    assert main(["not-a-match", "id:s1", "places.csv:1", "--db", str(db)]) == 2
    assert main(["query", "select count(*) from not_a_match", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == [{"count_star()": 0}]
    assert main(["matches", "run_nope", "--db", str(db)]) == 2


def test_a_mark_keeps_its_notes_and_is_undone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Marked again without a note, a pair keeps its note; a new note is added after it;
    `--undo` takes the mark back (with its notes said), and the next run merges the two again;
    `matches --out -` writes the merges as CSV on stdout and `--nl` one JSON line a merge."""
    csv_path, db = write(tmp_path / "places.csv"), tmp_path / "wh.duckdb"
    mark = ["not-a-match", "id:s1", "id:s2", "--db", str(db), "--json"]
    with served(KEY, fail_rate=0.0) as (_, target):
        first = placeflow.run([str(csv_path)], db=db, target=target, options=REPEATS)
        capsys.readouterr()
        assert main(["matches", first.run_id, "--db", str(db), "--out", "-"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2 and lines[0].startswith("source_file,")
        assert main(["matches", first.run_id, "--db", str(db), "--nl"]) == 0
        (line,) = capsys.readouterr().out.splitlines()
        assert isinstance(json.loads(line)["evidence"], dict)
        notes = []
        for extra in (["--note", "two branches"], [], ["--note", "different owners"]):
            assert main([*mark, *extra]) == 0
            notes.append(json.loads(capsys.readouterr().out)["note"])
        assert notes == ["two branches", "two branches", "two branches; different owners"]
        assert main([*mark, "--undo"]) == 0
        undone = json.loads(capsys.readouterr().out)
        assert (undone["status"], undone["note"], undone["exit_code"]) == (
            "undone", "two branches; different owners", 0)  # fmt: skip
        assert main([*mark, "--undo"]) == 2  # nothing left to undo
        assert json.loads(capsys.readouterr().out)["exit_code"] == 2
        forced = REPEATS.model_copy(update={"force": True})
        again = placeflow.run([str(csv_path)], db=db, target=target, options=forced)
    assert again.duplicates == 1  # merged again once the mark is taken back
