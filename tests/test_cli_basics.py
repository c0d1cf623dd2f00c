"""The basics a CLI is expected to have (issue 48): --version and py.typed, a configuration
file and PLACEFLOW_DB, -q on every command, one duration syntax, output that pipes, one JSON
error shape, and every JSON result carrying its exit code and status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import placeflow
from placeflow.cli.main import build_parser, main
from placeflow.config import DEFAULT_DB, file_settings, load_settings, warehouse_path
from placeflow.errors import EXIT_ALL_REJECTED, ConfigError, OptionsError
from placeflow.options import RunOptions, duration_days, parse_duration
from placeflow.pipeline.account import RunSummary
from placeflow.runner.target import Target
from tests.sandbox_target import served
from tests.test_run import write_places

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk_cli_basics_paid_key_48"


@dataclass(frozen=True)
class Done:
    """A warehouse holding one completed run of 6 rows (one a duplicate)."""

    db: Path
    summary: RunSummary
    target: Target
    url: str


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Done]:
    tmp = tmp_path_factory.mktemp("basics")
    with served(KEY) as (_, target):
        db = tmp / "w.duckdb"
        places = write_places(tmp / "p.csv", 5, duplicates=1)
        summary = placeflow.run([str(places)], db=db, target=target)
        yield Done(db, summary, target, target.base_url)


def subcommands() -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return dict(getattr(sub, "choices", {}))


def env_for(url: str, **extra: str) -> dict[str, str]:
    """The environment of a `placeflow` subprocess pointed at the test sandbox."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEFLOW_", "PREFECT_"))}
    return {**base, "PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": url, **extra}


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`placeflow --version` prints the distribution's version and exits 0."""
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"placeflow {placeflow.__version__}"


def test_the_package_is_marked_typed() -> None:
    """py.typed sits in the package, which the wheel ships whole (src/placeflow)."""
    assert (ROOT / "src" / "placeflow" / "py.typed").is_file()


@pytest.mark.slow
def test_the_built_wheel_ships_py_typed(tmp_path: Path) -> None:
    """The wheel uv builds from the tree holds placeflow/py.typed."""
    uv = os.environ.get("UV") or shutil.which("uv")  # `uv run` names itself in UV
    command = [uv] if uv else ["python3", "-m", "uv"]  # as the README installs it
    subprocess.run(
        [*command, "build", "--wheel", "-o", str(tmp_path)],
        cwd=ROOT, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("placeflow-*.whl")
    assert "placeflow/py.typed" in zipfile.ZipFile(wheel).namelist()


def test_settings_come_from_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    """--db beats PLACEFLOW_DB, which beats placeflow.toml's db, which beats pyproject's
    [tool.placeflow], which beats the default; a key in a file is refused."""
    assert warehouse_path(None, {}, tmp_path) == DEFAULT_DB
    (tmp_path / "pyproject.toml").write_text('[tool.placeflow]\ndb = "from-pyproject.duckdb"\n')
    assert warehouse_path(None, {}, tmp_path) == "from-pyproject.duckdb"
    (tmp_path / "placeflow.toml").write_text('db = "from-file.duckdb"\ntier = "free"\n')
    assert warehouse_path(None, {}, tmp_path) == "from-file.duckdb"
    assert load_settings({}, tmp_path).limits == load_settings({"PLACEFLOW_TIER": "free"}).limits
    env = {"PLACEFLOW_DB": "from-env.duckdb"}
    assert warehouse_path(None, env, tmp_path) == "from-env.duckdb"
    assert load_settings(env, tmp_path).db == "from-env.duckdb"
    assert warehouse_path("flag.duckdb", env, tmp_path) == "flag.duckdb"
    (tmp_path / "placeflow.toml").write_text('api_key = "sk_x"\n')
    with pytest.raises(ConfigError, match="PLACEFLOW_API_KEY"):
        file_settings(tmp_path)


def test_a_run_without_db_writes_the_warehouse_placeflow_db_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With PLACEFLOW_DB set and no --db, `placeflow run` writes that warehouse (none at the
    default path); `runs` reads it back the same way. Under -q, with no key (the embedded
    sandbox), nothing is said on stderr."""
    db = tmp_path / "elsewhere" / "env.duckdb"
    places = write_places(tmp_path / "p.csv", 2)
    for name in ("PLACEFLOW_API_KEY", "PLACEFLOW_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PLACEFLOW_DB", str(db))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(places), "--json", "-q"]) == 0
    out, err = capsys.readouterr()
    ran = json.loads(out)
    assert err == "" and "embedded sandbox" in ran["target"]
    assert db.is_file() and not (tmp_path / DEFAULT_DB).exists()
    assert main(["runs", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [ran["run_id"]]


def test_every_command_takes_quiet() -> None:
    """-q/--quiet parses on every command."""
    for name, parser in subcommands().items():
        flags = {s for a in parser._actions for s in a.option_strings}  # type: ignore[attr-defined]  # argparse keeps them private
        assert {"-q", "--quiet"} <= flags, name


def test_every_age_flag_reads_one_duration_syntax() -> None:
    """30d, 12h, 2w and a bare number of days, for --max-age and --older-than alike; the old
    forms keep working and each flag's help says a bare number is days."""
    assert duration_days("2w") == 14 and duration_days("12h") == 0.5 and duration_days("7") == 7
    assert parse_duration("30d") == parse_duration("30") == parse_duration(30)
    assert RunOptions.parse({"max_age_days": "2w"}).max_age_days == 14
    assert RunOptions.parse({"max_age_days": 3.5}).max_age_days == 3.5
    with pytest.raises(OptionsError, match="--max-age"):
        RunOptions.parse({"max_age_days": "soon"})
    args = build_parser().parse_args(["run", "x.csv", "--max-age", "12h"])
    from placeflow.cli.options import options_from_args

    assert options_from_args(args).max_age_days == 0.5
    ages = ("max_age_days", "max_age", "older_than")
    helps = {
        name: " ".join(a.help or "" for a in p._actions if a.dest in ages)  # type: ignore[attr-defined]  # private list
        for name, p in subcommands().items()
    }
    for name in ("run", "estimate", "refresh", "research"):
        assert "a bare number is days" in helps[name], name


def test_unknown_runs_give_one_error_document(
    done: Done, capsys: pytest.CaptureFixture[str]
) -> None:
    """rows, matches and report of an unknown run under --json each print one JSON document
    with exit_code 2, status "error", and the reason as error and message."""
    for command in (["rows", "run_nope", "--out", "x.csv"], ["matches", "run_nope"],
                    ["report", "run_nope"]):  # fmt: skip
        assert main([*command, "--db", str(done.db), "--json"]) == 2
        doc = json.loads(capsys.readouterr().out)
        assert doc["exit_code"] == 2 and doc["status"] == "error", command
        assert "run_nope" in doc["error"] and doc["message"] == doc["error"]


def test_every_json_result_carries_exit_code_and_status(
    done: Done, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """rows, matches, report, not-a-match and resume print objects with exit_code and status;
    runs --json stays a list, and --nl prints one object a line."""
    run_id, db = done.summary.run_id, str(done.db)
    for command in (
        ["rows", run_id, "--out", str(tmp_path / "r.csv")],
        ["matches", run_id],
        ["report", run_id, "--out", str(tmp_path / "r.html")],
        ["resume", run_id],
    ):
        assert main([*command, "--db", db, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["exit_code"] == 0 and doc["status"], command
    assert main(["runs", "--db", db, "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)
    assert main(["runs", "--db", db, "--nl"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["run_id"] == run_id


def test_rows_and_matches_write_csv_to_stdout(
    done: Done, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rows RUN --out -` prints every input row as CSV (a header and 6 rows); `matches --out -`
    prints its header even for a run without merges."""
    assert main(["rows", done.summary.run_id, "--db", str(done.db), "--out", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + done.summary.rows_read == 7
    assert main(["matches", done.summary.run_id, "--db", str(done.db), "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("source_file,")


def test_query_cuts_its_table_on_a_terminal_only(
    done: Done, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the table stops at --limit rows and at the terminal's width, and says so
    on stderr; piped, --csv and --json it is never cut."""
    sql = "select * from range(120) t(n)"
    db = str(done.db)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["query", sql, "--db", db]) == 0
    out, err = capsys.readouterr()
    assert "50 of 120 rows shown" in err and "│ 49 " in out and "│ 50 " not in out
    assert main(["query", sql, "--db", db, "--limit", "0"]) == 0
    assert "│ 119 " in capsys.readouterr().out
    assert main(["query", sql, "--db", db, "--csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 121
    assert main(["query", sql, "--db", db, "--nl"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 120
    wide = "select " + ", ".join(f"'a longish value' as column_{i}" for i in range(30))
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((80, 24)))
    assert main(["query", wide, "--db", db]) == 0
    out, err = capsys.readouterr()
    assert max(map(len, out.splitlines())) <= 80 and "columns fit the terminal" in err
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert main(["query", sql, "--db", db]) == 0
    out, err = capsys.readouterr()
    assert "│ 119 " in out and "shown" not in err
    assert main(["query", wide, "--db", db]) == 0
    assert "column_29" in capsys.readouterr().out  # piped: every column


@pytest.mark.parametrize(
    "command",
    [
        ["query", "select * from range(200000)"],
        ["runs", "--json"],
        ["matches", "RUN", "--json"],
        ["rows", "RUN", "--out", "-"],
    ],
)
def test_a_closed_pipe_ends_the_command_without_a_traceback(done: Done, command: list[str]) -> None:
    """`placeflow ... | head -c 10`: the reader closes the pipe after 10 bytes; the command
    ends with exit 0 and nothing on stderr."""
    argv = [c.replace("RUN", done.summary.run_id) for c in command]
    with subprocess.Popen(
        [sys.executable, "-m", "placeflow.cli", *argv, "--db", str(done.db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(done.url),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        head = proc.stdout.read(10)
        proc.stdout.close()  # as `head -c 10` does
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert len(head) == 10
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert code == 0


def test_a_run_whose_every_row_is_rejected_exits_6(
    done: Done, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A semicolon file whose only row has a value too many: status all_rejected, exit 6, the
    reject reason speaks of semicolons, and the summary does not read as a row number."""
    bad = tmp_path / "semi.csv"
    bad.write_text("name;city\nA;B;C\n", encoding="utf-8")
    db = tmp_path / "w.duckdb"
    summary = placeflow.run([str(bad)], db=db, target=done.target)
    assert summary.status == "all_rejected" and summary.rejected == summary.rows_read == 1
    from placeflow.reporting.summary import exit_code_for, text_summary

    assert exit_code_for(summary.status) == EXIT_ALL_REJECTED == 6
    assert "1 (1 unreadable;" in text_summary(summary)
    assert main(["rows", summary.run_id, "--db", str(db), "--out", "-"]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert "semicolon" in row and "comma" not in row
    assert main(["runs", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "all_rejected"
    assert main(["query", "select status from runs", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"status": "all_rejected"}]
    assert main(["resume", summary.run_id, "--db", str(db), "--json"]) == 0  # nothing to do
    assert "nothing to resume" in json.loads(capsys.readouterr().out)["message"]


def test_an_empty_refresh_records_no_run_and_no_report(
    done: Done, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refresh with nothing stale ends completed (exit 0) and says so, with no run recorded
    and no report written."""
    for name, value in env_for(done.url).items():
        monkeypatch.setenv(name, value)
    reports = done.db.parent / "reports"
    before = sorted(p.name for p in reports.iterdir()) if reports.exists() else []
    db = str(done.db)
    assert main(["query", "select count(*) as n from runs", "--db", db, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)[0]["n"]
    assert main(["refresh", "--db", db, "--older-than", "30d", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["run_id"], doc["exit_code"]) == ("completed", None, 0)
    assert "nothing to refresh" in doc["message"]
    assert main(["query", "select count(*) as n from runs", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["n"] == runs
    assert (sorted(p.name for p in reports.iterdir()) if reports.exists() else []) == before


def test_one_run_time_everywhere(done: Done, capsys: pytest.CaptureFixture[str]) -> None:
    """The summary's seconds are the run's time as `runs` and the report read it (from its
    opening, its reading included, to its end)."""
    assert main(["runs", "--db", str(done.db), "--json"]) == 0
    (listed,) = [
        r for r in json.loads(capsys.readouterr().out) if r["run_id"] == done.summary.run_id
    ]
    assert listed["duration_s"] == pytest.approx(done.summary.seconds, abs=0.15)
    assert done.summary.seconds >= sum(
        v for k, v in done.summary.timings.items() if k in ("read", "normalize", "dedupe")
    )


def test_the_python_api_finds_its_target_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`placeflow.run(files)` with no target and no db: the embedded sandbox (no key set) and
    the warehouse PLACEFLOW_DB names."""
    for name in ("PLACEFLOW_API_KEY", "PLACEFLOW_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "api.duckdb"
    monkeypatch.setenv("PLACEFLOW_DB", str(db))
    monkeypatch.chdir(tmp_path)
    summary = placeflow.run([str(write_places(tmp_path / "p.csv", 2))])
    assert summary.status == "completed" and summary.succeeded == 2
    assert "embedded sandbox" in summary.target and db.is_file()


def test_a_failed_flow_state_resolves_into_an_exception() -> None:
    """A flow's Failed state carries its summary as a FailedResult: Prefect resolves it into
    that exception (no TypeError naming the dict), and it still reads as the summary."""
    from prefect.states import get_state_exception

    from placeflow.errors import FailedResult
    from placeflow.flows.run import as_state
    from placeflow.runner.ending import Outcome

    data = {"status": "failed", "exit_code": 1, "message": "chunk 1 failed"}
    state = as_state(Outcome(data, "chunk 1 failed"))
    found = get_state_exception(state)
    assert isinstance(found, FailedResult) and str(found) == "chunk 1 failed"
    assert dict(found) == data and found["exit_code"] == 1


def test_uv_run_does_not_compile_the_environment_every_time() -> None:
    """pyproject.toml does not set uv's compile-bytecode (it compiled 6,239 files on every
    `uv run`); CI compiles the environment once, before its first `uv run`."""
    import tomllib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert "compile-bytecode" not in tool.get("uv", {})
    steps = (ROOT / ".ci" / "run").read_text().splitlines()
    compiled = steps.index("python3 -m uv sync --frozen --compile-bytecode")
    assert compiled < min(i for i, s in enumerate(steps) if s.startswith("python3 -m uv run"))


def test_docs_give_one_table_of_every_status_and_exit_code() -> None:
    """docs/cli.md's table names every status a run ends with (state.lifecycle.RUN_STATES, but
    the two a run passes through) with the exit code errors.py gives it."""
    from placeflow import errors
    from placeflow.state.lifecycle import RUN_STATES

    doc = (ROOT / "docs" / "cli.md").read_text()
    table = doc.split("## Statuses and exit codes", 1)[1].split("\n\n", 2)[2]
    codes = {"completed": errors.EXIT_OK, "failed": errors.EXIT_FAILED,
             "interrupted": errors.EXIT_FAILED, "refused": errors.EXIT_REFUSED,
             "left_to_other_run": errors.EXIT_LEFT_TO_OTHER_RUN,
             "double_charged": errors.EXIT_DOUBLE_CHARGED,
             "all_rejected": errors.EXIT_ALL_REJECTED}  # fmt: skip
    assert set(RUN_STATES) - {"planned", "running"} == set(codes)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    for status, code in codes.items():
        (row,) = [r for r in rows if f"`{status}`" in r.split("|")[1]]
        assert f"`{code}`" in row.split("|")[2], row


def test_a_run_that_did_not_end_well_prints_the_error_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run's JSON document with a non-zero exit code carries `error` beside `message`, as
    every error document does; a completed run's does not."""
    from placeflow.cli.run import print_outcome

    failed = {"status": "failed", "message": "the warehouse is busy", "exit_code": 1}
    assert print_outcome(dict(failed), as_json=True) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["error"], doc["message"], doc["exit_code"]) == (
        "failed", "the warehouse is busy", "the warehouse is busy", 1)  # fmt: skip
    from tests.test_cli_ux import summary

    assert print_outcome({**summary().as_dict(), "exit_code": 0}, as_json=True) == 0
    assert "error" not in json.loads(capsys.readouterr().out)
