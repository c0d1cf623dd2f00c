"""Runs of the sample places against a sandbox served on loopback, recorded as a run would be.

A small, stable driver (the pipeline's stages are being refactored): the sample files' places
keyed by `place_keys`, sent in one bulk job over HTTP to a served sandbox at a given epoch, its
result file downloaded and loaded by the real loader (`load_result`), with the runs, run_places
and jobs rows a run writes. Also the sandbox's own ground truth for the same requests
(emulator/synth.py), to compare the warehouse with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import httpx
import polars as pl

from placeflow.api.models import ALLOWED_ENRICH_ATTRIBUTES, DEFAULT_ENRICH_ATTRIBUTES
from placeflow.emulator import DEFAULT_API_KEY, Sandbox, SandboxConfig
from placeflow.emulator.synth import SynthSettings, enrich_outcome, validate_outcome
from placeflow.pipeline.load import load_result
from placeflow.pipeline.placekey import place_keys
from placeflow.warehouse import insert_frame

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "data" / "samples").glob("*.csv"))
STAMP = "2026-01-01T00:00:00Z"
FIELDS = ("poi_name", "street", "address", "city", "region", "postcode", "country", "latitude",
          "longitude")


def sample_places() -> pl.DataFrame:
    """The sample restaurants as normalised places: unique place_key, request fields."""
    frames = [pl.read_csv(p, infer_schema=False) for p in SAMPLES]
    raw = pl.concat([f.select("name", "addr", "city") for f in frames])
    places = raw.select(
        pl.col("name").str.strip_chars().alias("poi_name"),
        pl.col("addr").str.strip_chars().alias("street"),
        pl.lit(None, pl.String).alias("address"),
        pl.col("city").str.strip_chars().alias("city"),
        pl.lit(None, pl.String).alias("region"),
        pl.lit(None, pl.String).alias("postcode"),
        pl.lit("US").alias("country"),
        pl.lit(None, pl.Float64).alias("latitude"),
        pl.lit(None, pl.Float64).alias("longitude"),
    ).filter(pl.col("poi_name").is_not_null())
    keyed = places.with_columns(place_keys(places))
    return keyed.unique("place_key", keep="first", maintain_order=True)


def _requests(places: pl.DataFrame, mode: str, attributes: Sequence[str]) -> list[str]:
    fields = [pl.col("place_key").alias("id"), *(pl.col(f) for f in FIELDS)]
    plain = places.select(pl.struct(fields).struct.json_encode()).to_series().to_list()
    if mode == "validate":
        return [str(r) for r in plain]
    extra = ',"attributes":' + json.dumps(list(attributes)) + "}"
    return [str(r)[:-1] + extra for r in plain]


def run_places(
    con: duckdb.DuckDBPyConnection,
    workdir: Path,
    *,
    run_id: str,
    epoch: int,
    now: datetime,
    mode: str = "enrich",
    attributes: Sequence[str] = (),
    places: pl.DataFrame | None = None,
    fail_rate: float = 0.01,
) -> str:
    """One completed run of `places` (the samples by default) sent as one bulk job to a
    sandbox at `epoch`, loaded into the warehouse as of `now`; returns run_id."""
    places = sample_places() if places is None else places
    chosen = attributes or DEFAULT_ENRICH_ATTRIBUTES
    attrs = () if mode == "validate" else tuple(
        a for a in ALLOWED_ENRICH_ATTRIBUTES if a in chosen)
    requests = _requests(places, mode, attrs)
    path = workdir / f"{run_id}.jsonl.gz"
    sandbox = Sandbox(SandboxConfig(epoch=epoch, fail_rate=fail_rate))
    with sandbox.serve() as served, httpx.Client(
        base_url=served.base_url, headers={"X-API-Key": DEFAULT_API_KEY}, timeout=30
    ) as http:
        body = '{"pois":[' + ",".join(requests) + "]}"
        submitted = http.post(f"/v1/jobs/{mode}", content=body,
                              headers={"Content-Type": "application/json"})
        submitted.raise_for_status()
        batch_id = submitted.json()["batch_id"]
        status = http.get(f"/v1/jobs/{batch_id}").json()
        for _ in range(200):  # bounded poll: the sandbox finishes a job at submission
            if status["status"] == "completed":
                break
            time.sleep(0.05)
            status = http.get(f"/v1/jobs/{batch_id}").json()
        assert status["status"] == "completed", status
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(httpx.get(status["results"]["files"][0]["url"]).content)
    signature = f"{mode}|{','.join(attrs)}|no-summary"
    con.execute(
        "insert into runs (run_id, created_at, status, mode, attributes, signature, submitted)"
        " values (?, ?, 'running', ?, ?, ?, ?)",
        [run_id, now, mode, ",".join(attrs), signature, places.height],
    )
    insert_frame(con, "run_places", pl.DataFrame({
        "run_id": run_id,
        "place_key": places["place_key"],
        "chunk_no": pl.Series([0] * places.height, dtype=pl.Int32),
        "position": pl.Series(range(places.height), dtype=pl.Int32),
        "request": requests,
    }))
    con.execute(
        "insert into jobs (run_id, chunk_no, route, kind, rows, status, batch_id, credits_held,"
        " created_at) values (?, 0, 'job', ?, ?, 'completed', ?, ?, ?)",
        [run_id, mode, places.height, batch_id, places.height, now],
    )
    load_result(con, run_id=run_id, chunk_no=0, kind=mode,  # type: ignore[arg-type]
                path=path, billing="job", held=places.height, ref=batch_id, now=now)
    con.execute("update runs set status = 'completed', finished_at = ? where run_id = ?",
                [now, run_id])
    return run_id


def sent_requests(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, dict[str, Any]]:
    """The exact requests a run sent, by place_key."""
    rows = con.execute(
        "select place_key, request from run_places where run_id = ?", [run_id]
    ).fetchall()
    return {str(k): json.loads(r) for k, r in rows}


def sandbox_answer(request: dict[str, Any], *, mode: str, epoch: int,
                   fail_rate: float = 0.01) -> dict[str, Any]:
    """What the sandbox answers for a request at an epoch (its own synthesis)."""
    settings = SynthSettings(epoch=epoch, fail_rate=fail_rate)
    if mode == "validate":
        return validate_outcome(request, settings=settings, now=STAMP)
    return enrich_outcome(request, settings=settings, now=STAMP)
