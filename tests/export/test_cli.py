"""`placeflow export` through its argparse wiring: output, exit codes, and the password kept
out of everything it prints, records and writes."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from placeflow.cli.export import run
from tests.pgserver import PgServer


def test_cli_json_and_password_never_shown(
    db: Path,
    pg_db: PgServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the password in PGPASSWORD it works, and the password appears in no output, no
    warehouse row and no error; a wrong one fails with exit code 1, redacted."""
    monkeypatch.setenv("PGPASSWORD", pg_db.password)
    assert (
        run(
            [
                "export",
                "--db",
                str(db),
                "--to",
                pg_db.url(),
                "--tables",
                "places_latest,runs",
                "--json",
            ]
        )
        == 0
    )
    first = json.loads(capsys.readouterr().out)
    assert first["rows"] > 0 and first["exit_code"] == 0
    assert first["destination"] == pg_db.url()
    assert run(["export", "--db", str(db), "--to", pg_db.url(), "--tables", "places_latest"]) == 0
    text = capsys.readouterr()
    assert "places_latest: 0 rows" in text.out
    monkeypatch.setenv("PGPASSWORD", "Wr0ngButSecret!")
    assert run(["export", "--db", str(db), "--to", pg_db.url(), "--tables", "runs"]) == 1
    failed = capsys.readouterr()
    assert "password authentication failed" in failed.err
    with duckdb.connect(str(db), read_only=True) as con:
        recorded = con.execute(
            "select * from export_state union all by name select * from export_log"
        ).fetchall()
    shown = first | {
        "out": text.out + text.err + failed.out + failed.err,
        "recorded": repr(recorded),
    }
    assert pg_db.password not in json.dumps(shown, default=str)
    assert "Wr0ngButSecret" not in json.dumps(shown, default=str)


def test_cli_parquet_text_and_bad_arguments(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file:// export prints a line per table; an unknown table or a missing warehouse is
    exit code 2."""
    dest = (tmp_path / "lake").as_uri()
    assert run(["export", "--db", str(db), "--to", dest, "--tables", "places_latest"]) == 0
    assert "places_latest: 120 rows in places_latest/export_date=" in capsys.readouterr().out
    assert run(["export", "--db", str(db), "--to", dest, "--tables", "nowhere"]) == 2
    assert "cannot export nowhere" in capsys.readouterr().err
    assert run(["export", "--db", str(tmp_path / "none.duckdb"), "--to", dest]) == 2


def test_parquet_destination_that_cannot_be_written_is_said_not_a_traceback(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--to a file: exit 2, the file untouched. A table folder that cannot be made (a file in
    its place): exit 1 naming it; the tables exported before it stay, and once it is fixed
    the same command finishes the export (the first table's rows are not sent again)."""
    taken = tmp_path / "report.pdf"
    taken.write_bytes(b"%PDF-1.7 not a folder")
    assert run(["export", "--db", str(db), "--to", str(taken)]) == 2
    assert "report.pdf is a file: give a folder" in capsys.readouterr().err
    assert taken.read_bytes() == b"%PDF-1.7 not a folder"

    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "runs").write_text("in the way")
    tables = ["--tables", "places_latest,runs", "--json"]
    assert run(["export", "--db", str(db), "--to", str(lake), *tables]) == 1
    failed = json.loads(capsys.readouterr().out)
    assert failed["exit_code"] == 1, failed
    assert failed["error"].startswith(f"cannot write the Parquet export under {lake}: ")
    assert str(lake / "runs") in failed["error"]
    assert list((lake / "places_latest").rglob("*.parquet"))
    (lake / "runs").unlink()
    assert run(["export", "--db", str(db), "--to", str(lake), *tables]) == 0
    sent = {t["table"]: t["rows"] for t in json.loads(capsys.readouterr().out)["tables"]}
    assert sent["places_latest"] == 0 and sent["runs"] > 0


def test_cli_refuses_a_password_in_the_url(
    db: Path, pg_db: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A postgresql:// URL carrying a password (or password= in its query) is exit code 2,
    saying where the password goes; nothing reaches PostgreSQL and the password is not shown."""
    for dest in (
        pg_db.url(with_password=True),
        f"{pg_db.url()}?sslmode=disable&password={pg_db.password}",
        # a password holding "/" or "#": Python's urlsplit sees none, libpq (and the guard) do
        f"postgresql://{pg_db.user}:{pg_db.password}/x@{pg_db.host}:{pg_db.port}/{pg_db.database}",
        f"postgresql://{pg_db.user}:#{pg_db.password}@{pg_db.host}:{pg_db.port}/{pg_db.database}",
    ):
        assert run(["export", "--db", str(db), "--to", dest, "--json"]) == 2
        out = capsys.readouterr()
        refused = json.loads(out.out)
        assert "PGPASSWORD" in refused["error"] and "pg_password_block" in refused["error"]
        assert pg_db.password not in out.out + out.err
    assert pg_db.psql("select count(*) from pg_tables where schemaname = 'public'").strip() == "0"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from export_log").fetchall() == [(0,)]
