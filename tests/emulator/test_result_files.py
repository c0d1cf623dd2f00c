"""Contract: presigned result URLs on their own origin: no key, expiry, fresh URLs, faults."""

from __future__ import annotations

import gzip
import hashlib

import httpx

from .conftest import Harness, MakeHarness, place


def finished_job(h: Harness, n: int = 200) -> str:
    batch: str = h.post("/v1/jobs/validate", {"pois": [place(i) for i in range(n)]}).json()[
        "batch_id"
    ]
    h.tick(1.0)
    return batch


def file_entry(h: Harness, batch: str) -> dict[str, object]:
    entry: dict[str, object] = h.get(f"/v1/jobs/{batch}").json()["results"]["files"][0]
    return entry


def fetch(h: Harness, url: str, **headers: str) -> httpx.Response:
    with httpx.Client(transport=h.sandbox.transport(), headers=headers) as plain:
        return plain.get(url)


def test_url_needs_no_key_and_expires(make_harness: MakeHarness) -> None:
    """The URL works without a key until expires_at, then 403; a new poll gives a fresh one."""
    h = make_harness(rows_per_second=1_000.0, url_ttl_seconds=60.0)
    batch = finished_job(h)
    entry = file_entry(h, batch)
    assert fetch(h, str(entry["url"])).status_code == 200
    h.tick(61.0)
    expired = fetch(h, str(entry["url"]))
    assert expired.status_code == 403 and expired.json()["error_code"] == "URL_EXPIRED"
    fresh = file_entry(h, batch)
    assert fresh["url"] != entry["url"] and fresh["sha256"] == entry["sha256"]
    assert fetch(h, str(fresh["url"])).status_code == 200
    d = h.stats()["downloads"]
    assert d["expired"] == 1 and d["served"] == 2 and d["with_api_key"] == 0


def test_tampered_url_is_refused(sb: Harness) -> None:
    """A URL whose expiry or signature was altered is refused."""
    url = str(file_entry(sb, finished_job(sb))["url"])
    assert fetch(sb, url.replace("sig=", "sig=0")).status_code == 403
    assert fetch(sb, url.replace("expires=", "expires=9")).status_code == 403


def test_downloads_carrying_a_key_are_counted(sb: Harness) -> None:
    """The sandbox notes any download that carried X-API-Key (a client must never send it)."""
    url = str(file_entry(sb, finished_job(sb))["url"])
    fetch(sb, url, **{"X-API-Key": "leak"})
    assert sb.stats()["downloads"]["with_api_key"] == 1


def test_first_download_truncated_or_corrupted_then_good(sb: Harness) -> None:
    """Injected truncation and corruption break the sha256; the next download is whole."""
    for kind in ("truncate", "corrupt"):
        entry = file_entry(sb, finished_job(sb))
        sb.sandbox.inject("GET /files", kind)
        bad = fetch(sb, str(entry["url"])).content
        assert hashlib.sha256(bad).hexdigest() != entry["sha256"]
        good = fetch(sb, str(entry["url"])).content
        assert hashlib.sha256(good).hexdigest() == entry["sha256"]
        assert len(good) == entry["size_bytes"]
        assert len(gzip.decompress(good).splitlines()) == 200
        sb.tick(1.0)
    d = sb.stats()["downloads"]
    assert d["truncated"] == 1 and d["corrupted"] == 1


def test_random_download_faults_strike_first_downloads_only(make_harness: MakeHarness) -> None:
    """With truncate_download_rate 1 every file's first download is short, its second whole."""
    from placeflow.emulator import FaultConfig

    h = make_harness(rows_per_second=1_000.0, faults=FaultConfig(truncate_download_rate=1.0))
    entry = file_entry(h, finished_job(h))
    assert len(fetch(h, str(entry["url"])).content) < int(str(entry["size_bytes"]))
    assert len(fetch(h, str(entry["url"])).content) == entry["size_bytes"]


def test_expired_first_download_then_a_fresh_url_works(make_harness: MakeHarness) -> None:
    """With expire_url_rate 1 a file's first download is refused as expired; the next is served."""
    from placeflow.emulator import FaultConfig

    h = make_harness(rows_per_second=1_000.0, faults=FaultConfig(expire_url_rate=1.0))
    batch = finished_job(h)
    refused = fetch(h, str(file_entry(h, batch)["url"]))
    assert refused.status_code == 403 and refused.json()["error_code"] == "URL_EXPIRED"
    assert fetch(h, str(file_entry(h, batch)["url"])).status_code == 200
    assert h.stats()["downloads"]["expired"] == 1
