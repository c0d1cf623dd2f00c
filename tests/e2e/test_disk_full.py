"""A real `placeflow run --json` whose disk fills up or is read-only (issue 12: 20): one JSON
document with the run id (when there is one), the state the warehouse records and the exact
next command, a documented exit code, no traceback; once space is freed the resume finishes
the run without paying twice, as the sandbox's own counts show.

The disk is a small tmpfs mounted by the test (the suite runs as root in CI); where mounting
is not permitted the tests are skipped and say so.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.errors import EXIT_FAILED, EXIT_USAGE
from placeflow.store.writer import Writer
from tests.sandbox_target import sandbox_target

from .conftest import KEY, ServeSandbox, places, write_csv

pytestmark = pytest.mark.slow  # placeflow subprocesses through Prefect: minutes on 2 cores

ROOT = Path(__file__).resolve().parents[2]
NOISE = ("Traceback", "Crash detected", "nanobind", "KeyboardInterrupt")


@contextmanager
def small_disk(where: Path, size: str, *, read_only: bool = False) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` for the block (remounted read-only on demand)."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)


def fill(disk: Path) -> Path:
    """Write a file on `disk` until the file system says it is full; the file."""
    filler = disk / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        while True:
            try:
                out.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    for size in (4096, 512, 1):  # the last pages too
        with filler.open("ab", buffering=0) as out, suppress(OSError):
            while True:
                out.write(b"\0" * size)
    return filler


def environment(base_url: str, prefect_api: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEFLOW_")}
    env.update(PLACEFLOW_API_KEY=KEY, PLACEFLOW_BASE_URL=base_url, PREFECT_API_URL=prefect_api)
    return env


def assert_clean(out: str, err: str) -> dict[str, object]:
    """No traceback or crash noise; stdout is exactly one JSON document, returned."""
    for noise in NOISE:
        assert noise not in out + err, (out + err)[-3000:]
    doc: dict[str, object] = json.loads(out)
    return doc


def test_disk_full_while_downloading_then_resume_finishes(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """The disk fills while a job's result is downloaded: exit 1, one document with the run id,
    the warehouse's state and `placeflow resume RUN_ID --db ...`; with space freed, resume
    loads the job the sandbox ran once (no second submission, nothing charged twice)."""
    sb = serve_sandbox()
    csv = write_csv(tmp_path / "p.csv", places(120))
    with small_disk(tmp_path / "disk", "16m") as disk:
        db = disk / "wh.duckdb"
        cmd = [sys.executable, "-m", "placeflow.cli", "run", str(csv), "--db", str(db)]
        gate = sb.sandbox.hold("GET /files")
        with subprocess.Popen(
            [*cmd, "--route", "job", "--json"], env=environment(sb.base_url, prefect_api),
            cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ) as proc:  # fmt: skip
            assert gate.arrived.wait(240), "the run never fetched its result"
            filler = fill(disk)
            gate.open()
            out, err = proc.communicate(timeout=240)
        assert proc.returncode == EXIT_FAILED, err[-3000:]
        doc = assert_clean(out, err)
        run_id = str(doc["run_id"])
        assert run_id.startswith("run_")
        assert "No space left on device" in str(doc["message"])
        assert doc["next"] == f"placeflow resume {run_id} --db {db}"
        assert doc["exit_code"] == EXIT_FAILED
        with duckdb.connect(str(db), read_only=True) as con:
            stored = con.execute("select status from runs where run_id = ?", [run_id]).fetchall()
        assert stored == [(doc["status"],)]  # the document says what the warehouse says
        assert doc["status"] in ("running", "interrupted")  # resumable, as after a crash
        filler.unlink()
        target = sandbox_target(sb.base_url, KEY)
        summary = placeflow.resume(run_id, db=db, target=target)
    assert summary.status == "completed" and summary.succeeded + summary.failed == 120
    stats = sb.stats()
    assert stats["jobs"]["created"] == 1 and stats["duplicate_submissions"] == 0
    assert stats["keys"][KEY]["double_charged_refs"] == []


def test_warehouse_disk_full_before_the_run_is_recorded(
    tmp_path: Path, serve_sandbox: ServeSandbox, prefect_api: str
) -> None:
    """The warehouse's disk is full from the start: exit 1, one document saying nothing was
    recorded or sent and naming the same command to run again; the sandbox saw no job."""
    sb = serve_sandbox()
    csv = write_csv(tmp_path / "p.csv", places(40))
    with small_disk(tmp_path / "disk", "8m") as disk:
        db = disk / "wh.duckdb"
        with Writer(db) as wh:  # an existing warehouse, migrated at its first statement
            wh.execute("select 1")
        fill(disk)
        args = ["run", str(csv), "--db", str(db), "--route", "job", "--json"]
        done = subprocess.run(
            [sys.executable, "-m", "placeflow.cli", *args],
            env=environment(sb.base_url, prefect_api), cwd=ROOT, capture_output=True,
            text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == EXIT_FAILED, done.stderr[-3000:]
        doc = assert_clean(done.stdout, done.stderr)
        assert doc.get("run_id") is None and doc["status"] == "failed", doc
        assert "No space left on device" in str(doc["message"])
        assert doc["next"] == "placeflow " + " ".join(args)
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("select count(*) from runs").fetchall() == [(0,)]
    assert sb.requests("POST /v1/jobs/enrich") == 0


def test_read_only_warehouse_is_one_document(tmp_path: Path) -> None:
    """A --db on a read-only file system: `run --json` and `resume --json` exit 2 with one
    JSON document saying the path cannot be written, before Prefect starts."""
    csv = write_csv(tmp_path / "p.csv", places(5))
    with small_disk(tmp_path / "disk", "8m") as disk:
        db = disk / "wh.duckdb"
        with Writer(db) as wh:
            wh.execute(
                "insert into runs (run_id, created_at, status, mode, signature)"
                " values ('run_x', now(), 'interrupted', 'enrich', 'enrich')"
            )
        remount_read_only(disk)
        for args in (("run", str(csv)), ("resume", "run_x")):
            done = subprocess.run(
                [sys.executable, "-m", "placeflow.cli", *args, "--db", str(db), "--json"],
                cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == EXIT_USAGE, done.stderr[-3000:]
            doc = assert_clean(done.stdout, done.stderr)
            assert doc["exit_code"] == EXIT_USAGE and doc["status"] == "error"
            assert "Read-only file system" in str(doc["message"]), doc
