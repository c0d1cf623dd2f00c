"""The CLI as a new analyst meets it (issue 12): errors before Prefect starts, one JSON document,
resume of a finished run changing nothing, the budget's estimate, plain summary wording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.emulator import Sandbox
from placeflow.options import RunOptions
from placeflow.pipeline.account import RunSummary
from placeflow.reporting.summary import against, text_summary
from placeflow.runner.target import Target
from tests.sandbox_target import served as served_sandbox
from tests.test_run import write_places

pytestmark = pytest.mark.slow  # starts placeflow/Prefect processes: minutes on 2 cores

KEY = "sk_cli_ux_paid_key_77"

PROBE = """
import sys
from placeflow.cli.main import main

code = main(sys.argv[1:])
print("PREFECT-LOADED" if "prefect" in sys.modules else "PREFECT-NOT-LOADED", file=sys.stderr)
sys.exit(code)
"""


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`placeflow ARGS` in a fresh interpreter that says whether it imported Prefect."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=120,
        check=False,
    )


def assert_clean_error(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, done.stderr
    assert words in done.stderr
    assert "PREFECT-NOT-LOADED" in done.stderr
    for noise in ("Traceback", "ERROR", "nanobind"):
        assert noise not in done.stderr + done.stdout


@dataclass(frozen=True)
class Served:
    sandbox: Sandbox
    url: str
    target: Target
    """What the library path (`placeflow.run`, `placeflow.resume`) is given to reach it."""


@pytest.fixture
def served() -> Iterator[Served]:
    with served_sandbox(KEY) as (sandbox, target):
        yield Served(sandbox, target.base_url, target)


def completed_run(served: Served, tmp_path: Path, n: int) -> tuple[Path, RunSummary]:
    """The warehouse of one run of `n` places on the library path, and its summary."""
    db = tmp_path / "w.duckdb"
    places = [str(write_places(tmp_path / "p.csv", n))]
    return db, placeflow.run(places, options=RunOptions(), db=db, target=served.target)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "no data rows"),
        (b"name,address,city,country\n", "no data rows"),
        (b"\x00\x01\x02\xff\xfe binary \x00\x00" * 50, "placeflow: "),
        ("name,city\nCaf\u00e9 \u00e9t\u00e9,Z\u00fcrich\n".encode("latin-1"), "placeflow: "),
        (b"colour,size\nred,3\n", "placeflow: "),
    ],
    ids=["empty", "header-only", "binary", "latin-1", "no-usable-columns"],
)
def test_unreadable_input_fails_before_prefect(tmp_path: Path, content: bytes, words: str) -> None:
    """Input that cannot be read as places exits 2 with its message, before Prefect loads."""
    path = tmp_path / "in.csv"
    path.write_bytes(content)
    done = cli("run", str(path), "--db", str(tmp_path / "w.duckdb"))
    assert_clean_error(done, 2, words)
    assert not (tmp_path / "w.duckdb").exists()


def test_missing_file_and_bad_argument_fail_before_prefect(tmp_path: Path) -> None:
    """A missing file and an out-of-bounds option are said at once: exit 2, no Prefect."""
    db = str(tmp_path / "w.duckdb")
    assert_clean_error(cli("run", str(tmp_path / "nope.csv"), "--db", db), 2, "no such file")
    places = write_places(tmp_path / "p.csv", 3)
    bad = cli("run", str(places), "--db", db, "--max-credits", "-1")
    assert_clean_error(bad, 2, "--max-credits must be 0 or more")


def test_resume_of_a_finished_run_changes_nothing(served: Served, tmp_path: Path) -> None:
    """`resume` of a completed run says it is finished, writes nothing, starts no Prefect."""
    db, summary = completed_run(served, tmp_path, 12)
    assert summary.status == "completed"
    query = "select * from run_credits order by all"
    with duckdb.connect(str(db), read_only=True) as con:
        before = con.execute(query).fetchall()
    requests = served.sandbox.stats()["requests"]
    done = cli("resume", summary.run_id, "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "completed" and doc["run_id"] == summary.run_id
    assert "finished" in doc["message"]
    assert "PREFECT-NOT-LOADED" in done.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(query).fetchall() == before
    assert served.sandbox.stats()["requests"] == requests  # the service saw nothing
    unknown = cli("resume", "no-such-run", "--db", str(db))
    assert_clean_error(unknown, 2, "no run no-such-run")


def test_completed_rerun_keeps_no_stale_unfinished_message(served: Served, tmp_path: Path) -> None:
    """A run stopped with chunks unfinished, then finished: summary and runs.message are clean."""
    db, first = completed_run(served, tmp_path, 5)
    run_id = first.run_id
    stale = f"1 chunk(s) unfinished: `placeflow resume {run_id}` finishes them"
    with duckdb.connect(str(db)) as con:  # as the stopped run left it
        con.execute(
            "update runs set status = 'interrupted', message = ? where run_id = ?", [stale, run_id]
        )
    finished = placeflow.resume(run_id, db=db, target=served.target)
    assert finished.status == "completed" and not finished.message
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select message from runs").fetchall() == [(None,)]


def test_json_errors_are_one_document(tmp_path: Path) -> None:
    """Under --json a missing file and a --db that cannot be written give one JSON document."""
    places = str(write_places(tmp_path / "p.csv", 3))
    for args in (
        ("run", str(tmp_path / "nope.csv"), "--db", str(tmp_path / "w.duckdb")),
        ("run", places, "--db", "/proc/placeflow-test/w.duckdb"),
    ):
        done = cli(*args, "--json")
        assert_clean_error(done, 2, "")
        doc = json.loads(done.stdout)
        assert doc["exit_code"] == 2 and doc["status"] == "error" and doc["message"]


def test_estimate_takes_max_credits_and_says_whether_run_would_refuse(
    served: Served, tmp_path: Path
) -> None:
    """`estimate --max-credits N` is accepted and says whether a run would be refused: exit 3
    when it would (#45), as the run itself would end."""
    env = {"PLACEFLOW_API_KEY": KEY, "PLACEFLOW_BASE_URL": served.url}
    places = str(write_places(tmp_path / "p.csv", 20))
    db = str(tmp_path / "w.duckdb")
    low = cli("estimate", places, "--db", db, "--max-credits", "1", "--json", env=env)
    assert low.returncode == 3, low.stderr
    doc = json.loads(low.stdout)
    assert doc["exit_code"] == 3 and doc["would_refuse"] is True and doc["max_credits"] == 1
    high = cli("estimate", places, "--db", db, "--max-credits", "100000", env=env)
    assert high.returncode == 0, high.stderr
    assert "--max-credits 100,000: a run of these options is within it" in high.stdout


def summary(**changes: object) -> RunSummary:
    base: dict[str, object] = {f: 0 for f in RunSummary.__dataclass_fields__}
    base.update(
        run_id="r1", status="completed", target="embedded sandbox at http://127.0.0.1:1",
        seconds=2.5, message=None, timings={}, cpu_timings={}, changes={}, inputs={},
        changed_per_credit=None, usage_delta=None, ledger_vs_usage=None,
    )  # fmt: skip
    base.update(changes)
    return RunSummary(**base)  # type: ignore[arg-type]  # built field by field for the test


def test_summary_wording_refusal_and_time() -> None:
    """Plain grammar for either target; a refused run sent nothing; the time is the run's, the
    command's start-up shown as a part of the command's."""
    assert against("embedded sandbox at http://127.0.0.1:1") == (
        "against the embedded sandbox at http://127.0.0.1:1"
    )
    assert against("https://api.example.com") == "against https://api.example.com"
    refused = text_summary(summary(status="refused", submitted=8013, not_answered=8013))
    assert "0 (refused: nothing sent)" in refused and "8,013" not in refused
    timed = text_summary(summary(), wall_seconds=12.3)
    assert "2.5 s (the command 12.3 s, of which start-up and finish 9.8 s)" in timed
