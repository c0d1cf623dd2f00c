"""Over real loopback HTTP: the job lifecycle across two origins, drops, and the CLI server."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
import time
from urllib.parse import urlsplit

import httpx
import pytest

from placeflow.emulator import DEFAULT_API_KEY, KeySpec, Sandbox, SandboxConfig

from .conftest import KEY, place


def test_job_lifecycle_over_http_on_two_origins() -> None:
    """Submit, poll to completion, download from the second port without a key, verify it."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),), rows_per_second=20_000.0))
    with (
        sandbox.serve() as srv,
        httpx.Client(base_url=srv.base_url, headers={"X-API-Key": KEY}) as api,
    ):
        assert urlsplit(srv.base_url).port != urlsplit(srv.files_url).port
        r = api.post(
            "/v1/jobs/enrich",
            json={"pois": [place(i) for i in range(2_000)]},
            headers={"Idempotency-Key": "e2e-1"},
        )
        assert r.status_code == 200
        batch = r.json()["batch_id"]
        deadline = time.monotonic() + 10
        while (s := api.get(f"/v1/jobs/{batch}").json())["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(max(0.05, s["eta_seconds"] / 2))
        f = s["results"]["files"][0]
        assert f["url"].startswith(srv.files_url)
        data = httpx.get(f["url"]).content
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size_bytes"]
        ids = [json.loads(x)["id"] for x in gzip.decompress(data).splitlines()]
        assert ids == [f"p{i}" for i in range(2_000)]
        stats = api.get("/_sandbox/stats").json()
    assert stats["downloads"] == {
        "total": 1,
        "served": 1,
        "with_api_key": 0,
        "refused": 0,
        "expired": 0,
        "truncated": 0,
        "corrupted": 0,
        "refused_forever": 0,
    }
    assert stats["requests"]["POST /v1/jobs/enrich"] == {"200": 1}


def test_dropped_connection_over_http() -> None:
    """A dropped response closes the socket without an answer; the work was still done."""
    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY),)))
    sandbox.inject("POST /v1/validate", "drop_response")
    with (
        sandbox.serve() as srv,
        httpx.Client(base_url=srv.base_url, headers={"X-API-Key": KEY}) as api,
    ):
        with pytest.raises(httpx.RemoteProtocolError):
            api.post("/v1/validate", json=place())
        assert api.post("/v1/validate", json=place()).status_code == 200
    assert sandbox.stats()["requests"]["POST /v1/validate"] == {"dropped": 1, "200": 1}


def test_cli_serves_the_default_key() -> None:
    """`placeflow sandbox --port P` serves the documented default key on loopback."""
    with subprocess.Popen(
        [sys.executable, "-m", "placeflow.cli", "sandbox", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            base = first.split("API ")[1].split(",")[0]
            r = httpx.get(f"{base}/v1/usage", headers={"X-API-Key": DEFAULT_API_KEY}, timeout=5)
            assert r.status_code == 200 and r.json()["tier"] == "paid"
            assert r.json()["available"] == 1_000_000
        finally:
            proc.terminate()


def test_cli_rejects_a_bad_key_spec() -> None:
    """A malformed --key is a usage error with a message, not a traceback."""
    r = subprocess.run(
        [sys.executable, "-m", "placeflow.cli", "sandbox", "--key", "k:tier=gold"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "tier must be free or paid" in r.stderr
    assert "Traceback" not in r.stderr
