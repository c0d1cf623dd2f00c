"""Two `placeflow run` processes on one key at once, against the sandbox over loopback: they keep
the key's limits together (the sandbox counts no 429) and both complete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from placeflow.emulator.faults import Gate

from .conftest import KEY, ServeSandbox

pytestmark = pytest.mark.slow

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "data" / "samples").glob("*.csv"))
CLIENT_LIMITS = "5/0.5s,100/30s"
"""The sandbox's paid windows at half length (10 per 0.5 s, 100 per 30 s): the client keeps the
minute as the key has it, and half the short window, so an arrival lagging its send by up to
0.6 s on two busy cores cannot make eleven arrivals out of ten sends."""
FIRST = "GET /v1/usage"
"""Each run's first request under the key (its balance, before it sends anything): held until
both runs are there, so their requests overlap."""


def start_run(tmp_path: Path, name: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PLACEFLOW_RATE_LIMITS=CLIENT_LIMITS)
    args = ["run", *map(str, SAMPLES), "--db", str(tmp_path / f"{name}.duckdb")]
    return subprocess.Popen(
        [sys.executable, "-m", "placeflow.cli", *args, "--route", "sync", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def arrived(gate: Gate, procs: list[subprocess.Popen[str]]) -> None:
    """Wait for a held request, failing at once if a run exits first."""
    for _ in range(600):
        if gate.arrived.wait(1.0):
            return
        for p in procs:
            if p.poll() is not None:
                out, err = p.communicate()
                raise AssertionError(f"a run exited {p.returncode} early:\n{out}\n{err}")
    raise AssertionError(f"no {gate.route} arrived within 600 s")


def test_two_runs_on_one_key_get_no_429(tmp_path: Path, serve_sandbox: ServeSandbox) -> None:
    """Two CLI runs sharing a key, released together: 0 responses 429 as counted by the sandbox,
    the minute window never passed, both runs completed."""
    sb = serve_sandbox(rate_window_scale=0.5)
    first = sb.sandbox.hold(FIRST)
    procs = [start_run(tmp_path, "a"), start_run(tmp_path, "b")]
    try:
        arrived(first, procs)
        second = sb.sandbox.hold(FIRST)  # the other run is still starting: its first is next
        arrived(second, procs)
        first.open()
        second.open()
        outputs = [p.communicate(timeout=900) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, f"{out}\n{err}"
        assert json.loads(out)["status"] == "completed"
    key = sb.stats()["keys"][KEY]
    batches = sb.stats()["requests"]["POST /v1/enrich-batch"]
    assert key["rate_limited"] == 0
    assert set(batches) == {"200"} and batches["200"] > 100
    # Never past the key's minute. Whether the two fill it depends on how fast this machine lets
    # them send (under load they may not), so no lower bound beyond having sent at all.
    assert 0 < key["peak_per_minute"] <= 100
