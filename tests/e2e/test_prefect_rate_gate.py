"""The Prefect-backed rate gate: two processes on one key, each taking Prefect global concurrency
slots (with decay) from a real server before every request, stay within the key's limits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from placeflow.emulator import KeySpec, Sandbox, SandboxConfig

from .prefect_server import prefect_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEY = "sk_gate_free_key_5c5c"
CLIENT = """
import sys
from placeflow.flows.rate_gate import PrefectRateGate
from placeflow.api.client import PlaceApiClient
from placeflow.api.limiter import RateLimits
from placeflow.support.redact import Secret

base_url, key, n = sys.argv[1:4]
limits = RateLimits.for_tier("free", window_scale=0.2, min_slack=0.15)
gate = PrefectRateGate(limits, base_url=base_url, api_key=Secret(key))
with PlaceApiClient(base_url=base_url, api_key=key, limiter=gate, timeout=10.0) as client:
    for _ in range(int(n)):
        client.usage()
"""


def test_two_processes_through_prefect_limits_get_no_429(tmp_path: Path) -> None:
    """Two processes on one key through PrefectRateGate: 0 responses 429 as the sandbox counts
    them, every request answered, and the limits exist on the server with their decay."""
    sandbox = Sandbox(
        SandboxConfig(keys=(KeySpec(key=KEY, tier="free", credits=10),), rate_window_scale=0.2)
    )
    with prefect_server(tmp_path / "prefect") as server, sandbox.serve() as served:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CLIENT, served.base_url, KEY, "4"],
                env=server.env,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, f"{out}\n{err}"
        limits = server.api("POST", "/v2/concurrency_limits/filter", {})
    key = sandbox.stats()["keys"][KEY]
    assert sandbox.stats()["requests"]["GET /v1/usage"] == {"200": 8}
    assert key["rate_limited"] == 0
    assert sorted(lim["slot_decay_per_second"] > 0 for lim in limits) == [True, True]
    assert all(KEY not in lim["name"] for lim in limits)


GATES = """
import sys
from placeflow.flows.rate_gate import PrefectRateGate
from placeflow.api.limiter import RateLimits
from placeflow.support.redact import Secret

base_url, key, capacity = sys.argv[1], sys.argv[2], int(sys.argv[3])
limits = RateLimits.for_tier("free", window_scale=0.2, min_slack=0.15)
PrefectRateGate(limits, base_url=base_url, api_key=Secret(key), capacity=capacity)
"""


def test_a_gate_on_limits_as_wanted_only_reads_them(tmp_path: Path) -> None:
    """A key's second gate finds its limits on the server as wanted and leaves them as they
    are (no create the server refuses and logs as its own error, no update restarting their
    decay); a gate wanting other slots corrects them."""
    with prefect_server(tmp_path / "prefect") as server:

        def gate(capacity: int) -> list[dict[str, object]]:
            done = subprocess.run(
                [sys.executable, "-c", GATES, "http://api.test", KEY, str(capacity)],
                env=server.env, cwd=REPO, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            found = server.api("POST", "/v2/concurrency_limits/filter", {})
            return sorted(found, key=lambda lim: str(lim["name"]))

        first = gate(1)
        again = gate(1)
        log = (server.home / "server.log").read_text(errors="replace")
        other = gate(2)
    assert len(first) == 2
    assert [(lim["updated"], lim["limit"]) for lim in again] == [
        (lim["updated"], lim["limit"]) for lim in first
    ]
    assert "UNIQUE constraint failed" not in log
    assert [lim["limit"] for lim in other] == [2, 2]
    assert [lim["updated"] for lim in other] != [lim["updated"] for lim in first]
