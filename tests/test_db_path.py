"""Issue 34 item 2: `--db` must be a DuckDB warehouse or a path that does not exist yet. A CSV,
Parquet or JSON file (which DuckDB 2.0 opens as a throwaway database), an empty file or a
directory is refused with exit code 2 by every command taking --db, and by the library's
`connect`, before anything is read or spent: the sandbox sees no request."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import placeflow
from placeflow.cli.main import build_parser, main
from placeflow.errors import EXIT_USAGE, NotAWarehouse, UsageError
from placeflow.store.warehouse import connect

from .sandbox_target import served

KEY = "sk_db_path_key_4444"

BAD = {
    "csv": b"id,name,city\n1,Corner Shop,Springfield\n",
    "parquet": b"PAR1\x15\x04\x15\x10\x15\x14L\x15\x04\x15\x00\x12\x00\x00PAR1",
    "json": b'[{"id": 1, "name": "Corner Shop"}]\n',
    "empty": b"",
}


def bad_path(tmp_path: Path, kind: str) -> Path:
    """A path of `kind`: a file of one of BAD's contents, or a directory."""
    if kind == "directory":
        found = tmp_path / "a-folder"
        found.mkdir()
        return found
    found = tmp_path / f"places.{kind}"
    found.write_bytes(BAD[kind])
    return found


def argv_for(command: str, db: Path, places: Path) -> list[str]:
    """The least arguments `command` takes, with `--db db`."""
    given = {
        "run": ["run", str(places)],
        "estimate": ["estimate", str(places)],
        "resume": ["resume", "run_20260101T000000_abcdef"],
        "refresh": ["refresh", "--older-than", "30d"],
        "research": ["research", str(places), "--fields", "cuisine:string"],
        "export": ["export", "--to", str(db.parent / "out")],
        "report": ["report", "run_20260101T000000_abcdef", "--out", str(db.parent / "r.html")],
        "runs": ["runs"],
        "not-a-match": ["not-a-match", "pk_a", "pk_b"],
        "matches": ["matches", "run_20260101T000000_abcdef"],
        "rows": ["rows", "run_20260101T000000_abcdef", "--out", str(db.parent / "o.csv")],
        "query": ["query", "select 1"],
        "budget": ["budget"],
    }
    return [*given[command], "--db", str(db)]


def commands_taking_db() -> set[str]:
    """Every sub-command of `placeflow` with a --db option."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name
        for name, p in sub.choices.items()
        if any("--db" in a.option_strings for a in p._actions)
    }


COMMANDS = sorted(
    ["run", "estimate", "resume", "refresh", "research", "export", "report", "runs",
     "not-a-match", "matches", "rows", "query", "budget"]
)  # fmt: skip


def test_the_list_names_every_command_taking_db() -> None:
    """The commands below are every sub-command that takes --db (none is left unchecked)."""
    assert commands_taking_db() == set(COMMANDS)


@pytest.mark.parametrize("kind", ["csv", "parquet", "json", "empty", "directory"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_db_that_is_not_a_warehouse(
    command: str,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Exit code 2 with a reason naming the path, the file left as it was, and no request
    reached the service (so nothing was spent)."""
    places = tmp_path / "p.csv"
    places.write_text("id,name,address,city,country\nu1,Corner Shop,1 Elm St,Springfield,USA\n")
    db = bad_path(tmp_path, kind)
    before = None if kind == "directory" else db.read_bytes()
    with served(KEY) as (sandbox, target):
        monkeypatch.setenv("PLACEFLOW_BASE_URL", target.base_url)
        monkeypatch.setenv("PLACEFLOW_API_KEY", KEY)
        code = main([*argv_for(command, db, places), "--json"] if command == "query" else
                    argv_for(command, db, places))  # fmt: skip
        assert sandbox.stats()["requests"] == {}
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured
    # under --json (query's case) the reason is the one document's, stderr left quiet
    said = json.loads(captured.out)["error"] if command == "query" else captured.err
    assert "not a DuckDB warehouse" in said and str(db) in said
    if before is not None:
        assert db.read_bytes() == before


def test_json_output_says_the_refusal_as_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under --json the refusal is one JSON document with exit_code 2."""
    db = bad_path(tmp_path, "csv")
    assert main(["runs", "--db", str(db), "--json"]) == EXIT_USAGE
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == EXIT_USAGE and "not a DuckDB warehouse" in out["message"]


def test_the_library_refuses_before_spending(tmp_path: Path) -> None:
    """`placeflow.run(db=a CSV file)` raises NotAWarehouse (a UsageError) before any request;
    `connect` refuses it for reading and for writing; a real warehouse and a new path open."""
    places = tmp_path / "p.csv"
    places.write_text("id,name,address,city,country\nu1,Corner Shop,1 Elm St,Springfield,USA\n")
    db = bad_path(tmp_path, "csv")
    with served(KEY) as (sandbox, target):
        with pytest.raises(NotAWarehouse) as refused:
            placeflow.run([str(places)], db=db, target=target)
        assert sandbox.stats()["requests"] == {}
    assert isinstance(refused.value, UsageError)
    for read_only in (True, False):
        with pytest.raises(NotAWarehouse):
            connect(db, read_only=read_only)
    fresh = tmp_path / "new" / "wh.duckdb"
    connect(fresh).close()
    connect(fresh, read_only=True).close()


@pytest.mark.parametrize("db", ["md:placeflow", "motherduck:places", "s3://bucket/wh.duckdb"])
def test_a_database_elsewhere_is_refused_not_made_a_local_file(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--db md:...` (MotherDuck) or a URL is refused with exit code 2 and a message naming
    it, by the CLI and by `connect`; no file of that name is made."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotAWarehouse, match="not a DuckDB file on this machine"):
        connect(db)
    assert main(["runs", "--db", db, "--json"]) == EXIT_USAGE
    assert "not a DuckDB file on this machine" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
