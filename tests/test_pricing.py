"""Pricing before doing: `refresh --estimate` and `export --estimate` say what they would send
and cost, within the warehouse's budgets, and send and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from placeflow.cli.main import main
from tests.test_run import write_places


def doc(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    found: dict[str, object] = json.loads(capsys.readouterr().out)
    return found


def runs(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute("select count(*) from runs").fetchone()
    return int(found[0]) if found else 0


@pytest.mark.slow  # a run and four commands, each with an embedded sandbox: ~18 s on two cores
def test_refresh_and_export_are_priced_before_they_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a run of 20 places (the embedded sandbox): refresh --estimate prices all 20, and
    5 under a week's budget of 5 for refresh (saying what it leaves out); export --estimate
    counts each table's rows; no run is recorded, nothing is exported."""
    monkeypatch.delenv("PLACEFLOW_API_KEY", raising=False)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    db = tmp_path / "wh.duckdb"
    csv = write_places(tmp_path / "p.csv", 20)
    assert main(["run", str(csv), "--db", str(db), "--route", "sync", "--json"]) == 0
    capsys.readouterr()
    refresh = ["refresh", "--older-than", "0", "--db", str(db), "--estimate", "--json"]
    assert main(refresh) == 0
    priced = doc(capsys)
    assert (priced["places"], priced["to_send"], priced["credits_at_most"]) == (20, 20, 20)
    assert (priced["status"], priced["exit_code"]) == ("estimated", 0)
    assert main(["budget", "set", "--credits", "5", "--per", "week", "--for", "refresh",
                 "--db", str(db)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(refresh) == 0
    out = capsys.readouterr()
    priced = json.loads(out.out)
    assert (priced["to_send"], priced["credits_at_most"], priced["budget_left"]) == (5, 5, 5)
    assert "15 of 20 stale places are left for a later refresh" in out.err
    assert "week budget (5 credits, for refresh)" in out.err
    assert runs(db) == 1, "an estimate records no run"
    lake = tmp_path / "lake"
    assert main(["export", "--db", str(db), "--to", str(lake), "--estimate", "--json"]) == 0
    exported = doc(capsys)
    listed = exported["tables"]
    assert isinstance(listed, list)
    tables = {t["table"]: t["rows"] for t in listed}
    assert exported["status"] == "estimated" and tables["places_latest"] == 20
    assert not lake.exists(), "an estimate writes nothing"
