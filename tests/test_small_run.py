"""A small run does only what it needs (#47): its summary is out before its report is written,
a plain-http service reads no CA bundle, and a staging table's column is asked of that table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from placeflow.api.transport import context_for, tls_context
from placeflow.cli.main import main
from placeflow.pipeline import placekey
from placeflow.pipeline.staging import Staging
from placeflow.reporting import published
from placeflow.store.dbfile import has_table


def test_the_summary_is_printed_before_the_report_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`placeflow run --json` prints its document, naming the report, and only then writes the
    report and the run's files, which are there when the command returns."""
    for name in ("PLACEFLOW_API_KEY", "PLACEFLOW_BASE_URL", "PREFECT_API_URL", "PLACEFLOW_DB"):
        monkeypatch.delenv(name, raising=False)
    ten = tmp_path / "ten.csv"
    ten.write_text(
        "id,name,address,city,country\n"
        + "".join(f"u{i},Corner Shop {i},{i} Elm Street,Springfield,USA\n" for i in range(10))
    )
    printed: list[str] = []
    write = published.write_files

    def writing(*args: Any, **kwargs: Any) -> published.Published:
        printed.append(capsys.readouterr().out)  # what the command printed before it
        return write(*args, **kwargs)

    monkeypatch.setattr(published, "write_files", writing)
    code = main(["run", str(ten), "--db", str(tmp_path / "wh.duckdb"), "--json", "--quiet"])
    assert code == 0 and len(printed) == 1
    document = json.loads(printed[0])
    assert document["status"] == "completed" and document["exit_code"] == 0
    report = Path(document["report"])
    assert report.is_file() and report.parent == tmp_path / "reports"
    assert (tmp_path / "runs" / document["run_id"] / "summary.md").is_file()


def test_a_plain_http_service_reads_no_ca_bundle() -> None:
    """The client of an http base URL (loopback) verifies with a context that trusts nothing,
    made without reading the CA bundle; an https one with the process's verifying context."""
    plain = context_for("http://127.0.0.1:8080")
    assert plain.cert_store_stats()["x509_ca"] == 0 and plain.check_hostname
    assert context_for("https://api.example.com") is tls_context()


def test_a_column_is_asked_of_its_table_alone() -> None:
    """`Staging.has_column` says whether a table has a column, and no for a table not there."""
    con = duckdb.connect()
    con.execute("create temp table pf_t as select 1 as own_key")
    staging = Staging(con, warehouse=False)
    assert staging.has_column("pf_t", "own_key")
    assert not staging.has_column("pf_t", "place_key")
    assert not staging.has_column("pf_missing", "own_key")


def test_a_table_is_there_or_not_by_its_name_alone(tmp_path: Path) -> None:
    """`dbfile.has_table` finds a table of the warehouse, a temporary one by its schema, and says
    no for a name that is not there."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("create table budgets (per text)")
    con.execute("create temp table pf_t as select 1 as a")
    assert has_table(con, "budgets") and has_table(con, "main.budgets")
    assert has_table(con, "temp.pf_t") and not has_table(con, "temp.budgets")
    assert not has_table(con, "not_a_match")


def test_a_few_keys_are_the_digests_duckdb_makes() -> None:
    """Up to SMALL_DIGEST texts are digested by hashlib into the very keys DuckDB's md5 makes
    of them (any text, accented and CJK letters, the empty one, a null)."""
    texts = pl.Series("k", ["", "x", "Café Ümlaut", "漢字 1", None, "1|a|b||US|40.7|-74.0"])
    few = placekey.digest_keys(texts)
    con = duckdb.connect()
    con.register("t", texts.to_frame())
    by_duckdb = con.sql("select 'pk_' || left(md5(k), 24) as place_key from t").pl()
    assert few.to_list() == by_duckdb.get_column("place_key").to_list()
    assert few.null_count() == 1 and few.name == "place_key"


def test_the_embedded_sandbox_is_reached_in_process_each_under_origins_of_its_own(
    tmp_path: Path,
) -> None:
    """Without a key, a run's sandbox answers through its in-process transport (no server
    thread starts), and two embedded sandboxes have two base URLs, so a
    client's limiter and spend journal (kept per base URL and key) never mix them."""
    import threading

    from placeflow.runner.target import open_target

    before = {t.name for t in threading.enumerate()}
    with (
        open_target(api_key=None, base_url=None, db=tmp_path / "a.duckdb") as one,
        open_target(api_key=None, base_url=None, db=tmp_path / "b.duckdb") as two,
    ):
        assert one.transport is not None and one.base_url != two.base_url
        with one.client() as api:
            assert api.usage().current_usage == 0
        started = {t.name for t in threading.enumerate()} - before
        assert not any(name.startswith("sandbox-") for name in started), started
    assert one.label == f"embedded sandbox kept in {tmp_path / 'a.duckdb.sandbox'}"


def test_a_small_input_is_gathered_in_the_hold_as_a_large_one_is_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of a few rows (local files of `SMALL_INPUT` bytes or fewer) reads and dedupes them
    in the warehouse's hold, without a scratch database; with the bound lowered below the file,
    the same run reads them in a scratch database, the warehouse let go; both record the same
    rows, places, matches and rejects."""
    import placeflow
    from placeflow.options import RunOptions
    from placeflow.runner import prepare
    from placeflow.runner.target import open_target

    rows = [f"u{i},Corner Shop {i},{i} Elm Street,Springfield,USA\n" for i in range(8)]
    rows += ["u8,Corner Shop 1,1 Elm St,Springfield,USA\n", "u9,,,,\n"]  # a near twin, a reject
    csv = tmp_path / "p.csv"
    csv.write_text("id,name,address,city,country\n" + "".join(rows))
    scratches: list[int] = []
    scratch = Staging.scratch

    def counted() -> Any:
        scratches.append(1)
        return scratch()

    monkeypatch.setattr(Staging, "scratch", counted)
    tables = {
        "run_rows": "source_row, disposition, place_key, match_rule",
        "run_places": "place_key, chunk_no",
        "run_matches": "own_key, answer_key, matched_key, match_rule",
        "rejects": "source_row, field, reason",
    }
    seen, used = [], []
    for bound in (prepare.SMALL_INPUT, 0):
        monkeypatch.setattr(prepare, "SMALL_INPUT", bound)
        db = tmp_path / f"wh-{bound}.duckdb"
        with open_target(api_key=None, base_url=None, db=db) as target:
            done = placeflow.run([str(csv)], options=RunOptions(), db=db, target=target)
        assert done.status == "completed" and done.rejected == 1, done.message
        used.append(len(scratches))
        with duckdb.connect(str(db), read_only=True) as con:
            seen.append(
                {
                    t: con.sql(f"select {c} from {t} order by all").fetchall()
                    for t, c in tables.items()
                }
            )
    assert used == [0, 1]
    assert seen[0] == seen[1] and seen[0]["rejects"]
    assert {row[1] for row in seen[0]["run_rows"]} >= {"submitted", "rejected"}


def test_a_command_s_imports_pause_the_collector_and_freeze_only_where_the_process_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`collector_paused` pauses the garbage collector for its block and turns it on again
    after; it freezes what is alive only when the process's entry point set FREEZE (a library
    call, as here, freezes nothing)."""
    import gc

    from placeflow.support import lazy

    frozen = gc.get_freeze_count()
    with lazy.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    monkeypatch.setattr(lazy, "FREEZE", True)
    try:
        with lazy.collector_paused():
            pass
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()


def test_the_cli_s_frozen_imports_leave_a_clean_teardown() -> None:
    """`python -m placeflow.cli` freezes its imports (FREEZE); where it then exits through the
    interpreter's teardown (--help, --version, a usage error) the bindings report no object
    left alive, and the exit codes are argparse's."""
    import subprocess
    import sys

    for args, code in ((["--help"], 0), (["--version"], 0), (["run"], 2)):
        done = subprocess.run(
            [sys.executable, "-m", "placeflow.cli", *args],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert done.returncode == code, done.stderr[-2000:]
        assert "nanobind" not in done.stdout + done.stderr, args


IMPORTS_PROBE = """
import sys
from placeflow.cli.main import main

code = main(sys.argv[1:])
print(sorted(m for m in ("pyarrow", "splink", "prefect") if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def test_a_small_run_imports_no_pyarrow_splink_or_prefect(tmp_path: Path) -> None:
    """A 10-row run on a new warehouse (the embedded sandbox) completes without importing
    pyarrow (about 70 ms of CPU: its frames cross to DuckDB as Arrow streams), Splink or
    Prefect; the sandbox it ran against charged its places."""
    import os
    import subprocess
    import sys

    ten = tmp_path / "ten.csv"
    ten.write_text(
        "id,name,address,city,country\n"
        + "".join(f"u{i},Corner Shop {i},{i} Elm Street,Springfield,USA\n" for i in range(10))
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEFLOW_", "PREFECT_"))}
    db = tmp_path / "wh.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_PROBE, "run", str(ten), "--db", str(db), "--json"],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert said == ["[]"], done.stderr[-3000:]  # (the bindings' teardown notes may follow)
    document = json.loads(done.stdout)
    assert document["status"] == "completed" and document["charged"] == 10
    kept = json.loads((tmp_path / "wh.duckdb.sandbox" / "state.json").read_text())
    (account,) = [k["account"] for k in kept["keys"].values()]  # as the embedded sandbox kept it
    assert account["charged"] == 10 and kept["requests"]["POST /v1/enrich-batch"] == {"200": 1}


def test_a_run_ending_through_the_interpreter_s_teardown_leaves_nothing_of_duckdb_alive(
    tmp_path: Path,
) -> None:
    """A run whose process exits through the interpreter's teardown (as it does once Prefect is
    imported) leaves no DuckDB object alive: the bindings report no leak. A frame read from a
    relation once kept the relation, and so its connection, alive to the end."""
    import os
    import subprocess
    import sys

    ten = tmp_path / "ten.csv"
    ten.write_text(
        "id,name,address,city,country\n"
        + "".join(f"u{i},Corner Shop {i},{i} Elm Street,Springfield,USA\n" for i in range(10))
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLACEFLOW_", "PREFECT_"))}
    argv = ["placeflow", "run", str(ten), "--db", str(tmp_path / "wh.duckdb"), "--json"]
    probe = (
        "import prefect, runpy, sys\n"  # with Prefect loaded, __main__ exits through sys.exit
        f"sys.argv = {argv!r}\n"
        "runpy.run_module('placeflow.cli', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["status"] == "completed"
    assert "nanobind" not in done.stderr, done.stderr[-3000:]
