"""`placeflow research` as scripts call it: the argument form, exit codes, one JSON line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placeflow.cli.research import main
from placeflow.store.warehouse import connect

from .conftest import KEY, SCALE, ServeSandbox, places, write_csv


def test_bad_field_spec_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A field outside the spec's limits exits 2 with the reason, before any request."""
    csv = write_csv(tmp_path / "p.csv", places(2))
    assert main(["research", str(csv), "--field", "x:colour", "--db", str(tmp_path / "d")]) == 2
    assert "not one of" in capsys.readouterr().err


def test_cli_form_runs_and_prints_one_json_summary(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """research INPUT --field ... --describe ... --verify-identity --max-credits --json: exit 0,
    one JSON summary whose charge is the sandbox's."""
    sb = serve(fail_rate=0.0)
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    csv = write_csv(tmp_path / "p.csv", places(12))
    argv = ["research", str(csv), "--field", "price:enum:$|$$", "--field", "vegan:bool",
            "--describe", 'vegan="Has vegan dishes"', "--verify-identity",
            "--max-credits", "36", "--db", str(tmp_path / "wh.duckdb"), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["charged"] == 36 == sb.credits()["charged"] and out["status"] == "completed"


def test_a_semicolon_file_with_odd_headers_is_read_as_told(
    tmp_path: Path,
    serve: ServeSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--map, --encoding and --separator as `placeflow run` takes them: the places the sandbox
    parsed from the research requests are the file's; the same command with the same reading
    resumes nothing and buys nothing again."""
    from placeflow.emulator import research as sandbox_research

    seen: list[str] = []
    record = sandbox_research._record

    def names_as_the_sandbox_parsed_them(book: Any, rows: Any, req: Any) -> None:
        seen.extend(poi.poi_name for poi in req.pois)
        record(book, rows, req)

    monkeypatch.setattr(sandbox_research, "_record", names_as_the_sandbox_parsed_them)
    sb = serve(fail_rate=0.0)
    monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
    monkeypatch.setenv("PLACEFLOW_BASE_URL", sb.base_url)
    monkeypatch.setenv("PLACEFLOW_RATE_LIMITS", f"10/{SCALE:g}s,100/{60 * SCALE:g}s")
    names = ["Crème Brûlée", "Brasserie Zürich", "Señor Taco"]
    path = tmp_path / "export.csv"
    rows = [f"{name};{i} Rue Haute;Liège" for i, name in enumerate(names)]
    lines = ["Nom du lieu;Adresse;Ville", *rows]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1252"))
    argv = ["research", str(path), "--field", "vegan:bool", "--map", "poi_name=Nom du lieu",
            "--map", "street=Adresse", "--map", "city=Ville", "--encoding", "cp1252",
            "--separator", ";", "--db", str(tmp_path / "wh.duckdb"), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["status"] == "completed" and out["submitted"] == 3
    assert sorted(seen) == sorted(names)
    assert out["charged"] == sb.credits()["charged"] == 3
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["skipped_fresh"] == 3 and again["charged"] == 0
    assert sb.credits()["charged"] == 3 and sorted(seen) == sorted(names)


def test_reading_flags_are_for_files_not_the_warehouse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "wh.duckdb"
    connect(db).close()  # a warehouse (an empty file is refused as --db)
    argv = ["research", "--from-warehouse", "--separator", ";", "--field", "vegan:bool",
            "--db", str(db)]  # fmt: skip
    assert main(argv) == 2
    assert "read INPUT files, not the warehouse" in capsys.readouterr().err
    bad = ["research", str(db), "--separator", ";;", "--field", "vegan:bool", "--db", str(db)]
    assert main(bad) == 2
    assert "--separator takes one character" in capsys.readouterr().err
