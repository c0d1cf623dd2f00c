"""Issue 34 item 7: `placeflow query` is read-only as it says: DuckDB's external access is off,
so no file but the warehouse is read or written (read_csv, COPY ... TO, ATTACH, EXPORT, INSTALL
are refused with a clear error), and no statement turns it back on; the warehouse's own
tables and views still read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placeflow.cli.main import main
from placeflow.errors import EXIT_OK, EXIT_USAGE
from placeflow.store.warehouse import connect


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A migrated, empty warehouse."""
    path = tmp_path / "wh.duckdb"
    connect(path).close()
    return path


def test_the_warehouse_reads(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tables and views (with their macros) read as before."""
    sql = "select (select count(*) from runs) as runs, (select count(*) from run_credits) as c"
    assert main(["query", sql, "--db", str(db), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == [{"runs": 0, "c": 0}]


@pytest.mark.parametrize(
    "sql",
    [
        "select * from read_csv('{secret}')",
        "select * from read_text('{secret}')",
        "select * from glob('{dir}/*')",
        "copy (select 'leaked' as x) to '{dir}/out.csv'",
        "copy runs to '{dir}/out.csv'",
        "attach '{dir}/other.duckdb' as other",
        "export database '{dir}/dump'",
        "install httpfs",
        "set enable_external_access = true",
    ],
)
def test_files_beyond_the_warehouse_are_refused(
    sql: str, db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each is refused with exit code 2 and a reason; no file is written, none is read out."""
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nsk_do_not_print_me\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["query", sql.format(secret=secret, dir=tmp_path), "--db", str(db)])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured
    assert "sk_do_not_print_me" not in captured.out + captured.err
    assert "refused" in captured.err or "failed" in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_refusal_names_why(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file read is refused with a message that says the query reads the warehouse only."""
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    assert main(["query", f"select * from read_csv('{secret}')", "--db", str(db)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "reads the warehouse only" in err and "disabled by configuration" in err


@pytest.mark.parametrize(
    "sql",
    [
        "set threads = 1",
        "pragma enable_profiling",
        "call enable_logging()",
        "select * from enable_logging(storage='file', storage_path='{dir}/log')",
        "set memory_limit = '64GB'",
    ],
)
def test_settings_and_calls_that_change_one_are_refused(
    sql: str, db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A setting, or a call that changes one, is refused with exit 2 and says why; no file."""
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["query", sql.format(dir=tmp_path), "--db", str(db)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "refused" in err and "reads the warehouse only" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_enable_logging_to_a_file_is_refused_not_an_abort(db: Path, tmp_path: Path) -> None:
    """`call enable_logging(storage='file', ...)` aborted the process (rc 134): a real
    `placeflow query --json` now exits 2 with one JSON error and nothing on stderr but it."""
    sql = f"call enable_logging(storage='file', storage_path='{tmp_path}/log')"
    done = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", "query", sql, "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == EXIT_USAGE, (done.returncode, done.stderr[-2000:])
    doc = json.loads(done.stdout)
    assert doc["exit_code"] == EXIT_USAGE and "refused" in str(doc.get("message", doc["error"]))
    assert "terminate" not in done.stderr and not (tmp_path / "log").exists()


def test_an_interval_reads_as_text_not_a_crash(db: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A result polars cannot take (an INTERVAL, `now() - created_at`; a BIT) is printed with
    that column as text: exit 0, no traceback and no Rust panic on stderr."""
    sql = "select interval 1 day as i, 1 as n, 1::bit as b"
    assert main(["query", sql, "--db", str(db), "--json"]) == EXIT_OK
    out, err = capfd.readouterr()
    assert json.loads(out) == [{"i": "1 day", "n": 1, "b": "00000000000000000000000000000001"}]
    assert "panicked" not in err and "Traceback" not in err
