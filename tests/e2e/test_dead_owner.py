"""A run's owner on another host dies (SIGKILL) after it claimed its places and sent its job's
POST, which the service never processed. On an injected clock past the owner's lease: an
overlapping run here buys none of its places and ends without waiting; `placeflow resume` of
the dead run is refused while the lease runs and then carries it out, the POST lost at the kill
settled by the key's usage (sent, not held as uncertain); the sandbox billed every place once.
bench/dead_owner.py measures the same in real time."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

import placeflow
from placeflow.errors import RunInProgress
from placeflow.options import RunOptions
from placeflow.state.lease import LEASE
from placeflow.state.runstate import utc_now

from .conftest import KEY, ServeSandbox, places, write_csv
from .test_claims import loopback

ROOT = Path(__file__).resolve().parents[2]


def past_the_lease() -> datetime:
    """The clock of a process looking after the dead owner's lease has passed."""
    return utc_now() + LEASE + LEASE / 10


@pytest.mark.slow
def test_a_dead_owner_on_another_host_passes_its_claims_to_its_resume(
    tmp_path: Path, serve_sandbox: ServeSandbox
) -> None:
    """The owner on "far-host" claims 24 places in two chunks: its first job is made, its
    second POST is held at the sandbox when it is killed (then dropped: no job). A run of 12 of
    its places and 8 more buys only the 8 and ends at once; the dead run's resume is refused
    under the live lease, then re-attaches the first job and sends the second chunk (the usage
    shows no job of it); 32 places billed once each, nothing held as uncertain."""
    served = serve_sandbox(rows_per_second=5_000.0)
    target = replace(loopback(served.base_url), label=served.base_url)  # as the owner's
    db = tmp_path / "wh.duckdb"
    first = write_csv(tmp_path / "a.csv", places(24))
    gate = served.sandbox.hold("POST /v1/jobs/enrich", after=1)
    cmd = [sys.executable, "-m", "tests.e2e.elsewhere", "far-host", "run", str(db), str(first),
           "--option", "route=job", "--option", "mode=enrich",
           "--option", "chunk_rows=12"]  # fmt: skip
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as p:
        assert gate.arrived.wait(120), "the owner never sent its POST"
        p.kill()
    gate.open(drop=True)
    with duckdb.connect(str(db), read_only=True) as con:
        (dead, host, status), *_ = con.execute(
            "select run_id, owner_host, status from runs").fetchall()  # fmt: skip
    assert (host, status) == ("far-host", "running")

    overlap = write_csv(tmp_path / "b.csv", places(12) + places(8, start=100))
    job = RunOptions(route="job", mode="enrich")
    second = placeflow.run([str(overlap)], db=db, target=target, options=job,
                           clock=past_the_lease)  # fmt: skip
    assert (second.submitted, second.claimed) == (8, 12)
    account = served.sandbox.backend.keys[KEY].account
    assert sum(account.rows_billed.values()) in (8, 20)  # the first job's may have ended

    with pytest.raises(RunInProgress, match="its lease passes at"):
        placeflow.resume(dead, db=db, target=target)
    resumed = placeflow.resume(dead, db=db, target=target, clock=past_the_lease)
    assert (resumed.status, resumed.succeeded) == ("completed", 24), resumed.message
    assert account.rows_billed_twice() == []
    assert sum(account.rows_billed.values()) == 32
    assert served.requests("POST /v1/jobs/enrich") == 4  # A's two (one dropped), B's, the resume's
