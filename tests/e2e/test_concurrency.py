"""Two runs of one key in one process share its rate limits: the sandbox sees no 429."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import placeflow
from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
from placeflow.fields import RateLimits
from placeflow.options import RunOptions
from placeflow.runner.target import Target
from tests.sandbox_target import sandbox_target

from .conftest import KEY, places, write_csv


def one_run(target: Target, csv: Path, db: Path, errors: list[BaseException]) -> None:
    """A whole run on the library path (no Prefect), as a thread of this process; exact
    dedupe (the places are distinct): Splink's pass proves nothing about the key's limits."""
    try:
        options = RunOptions(route="sync", dedupe="exact")
        placeflow.run([str(csv)], options=options, db=db, target=target)
    except BaseException as exc:
        errors.append(exc)


@pytest.mark.slow  # real-time windows: parallel workers loading the machine make arrivals lag
def test_two_runs_in_one_process_share_the_key_limits(tmp_path: Path) -> None:
    """Concurrent runs of one key stay within 10/s and 100/min together, with zero 429s."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),), rate_window_scale=0.1))
    with sandbox.serve() as srv:
        target = sandbox_target(
            srv.base_url, KEY, RateLimits.for_tier("paid", window_scale=0.1, min_slack=0.1)
        )
        errors: list[BaseException] = []
        threads = [
            threading.Thread(
                target=one_run,
                args=(
                    target,
                    write_csv(tmp_path / f"in{i}.csv", places(250, start=1000 * i)),
                    tmp_path / f"wh{i}.duckdb",
                    errors,
                ),
            )
            for i in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert errors == []
    stats = sandbox.stats()
    key = stats["keys"][KEY]
    assert sum(stats["requests"]["POST /v1/enrich-batch"].values()) == 50
    assert key["rate_limited"] == 0 and key["peak_per_second"] <= 10
    assert key["credits"]["charged"] > 0
