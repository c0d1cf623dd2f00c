"""What a user would otherwise write: a loop over the places, one request per place (or per ten).

Both loops send the same places the pipeline would (read from the input CSV as-is, no dedupe,
no pre-validation), ask for the pipeline's default enrich attributes, keep under the key's rate
limits with placeflow's own sliding-window limiter (so they never waste requests on 429s) and
back off on a 429 anyway. The sandbox counts every request.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import Any

import httpx

from placeflow.api.limiter import RateLimiter
from placeflow.fields import RateLimits

ATTRIBUTES = ["opening_hours", "phone", "website", "existence", "open_closed"]


def _places(path: Path, rows: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with path.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if len(out) >= rows:
                break
            place: dict[str, Any] = {"id": r["id"], "poi_name": r["name"].strip() or "?"}
            for src, dst in (
                ("address", "address"),
                ("city", "city"),
                ("state", "region"),
                ("country", "country"),
            ):
                if r.get(src, "").strip():
                    place[dst] = r[src].strip()
            if r.get("lat") and r.get("lon"):
                place["latitude"], place["longitude"] = float(r["lat"]), float(r["lon"])
            place["attributes"] = ATTRIBUTES
            out.append(place)
    return out


def run_loop(
    *, base_url: str, api_key: str, path: Path, rows: int, batch: int, window_scale: float
) -> dict[str, float]:
    """Send `rows` places, `batch` per request (1: POST /v1/enrich; 10: /v1/enrich-batch)."""
    places = _places(path, rows)
    limiter = RateLimiter(RateLimits.for_tier("paid", window_scale=window_scale, min_slack=0.0))
    sent = ok = 0
    t0 = time.perf_counter()
    with httpx.Client(base_url=base_url, headers={"X-API-Key": api_key}, timeout=60) as api:
        for i in range(0, len(places), batch):
            chunk = places[i : i + batch]
            if batch == 1:
                route, body = "/v1/enrich", json.dumps(chunk[0])
            else:
                route, body = "/v1/enrich-batch", json.dumps({"pois": chunk})
            while True:
                limiter.acquire()
                r = api.post(route, content=body, headers={"Content-Type": "application/json"})
                sent += 1
                if r.status_code != 429:
                    break
                time.sleep(float(r.headers.get("Retry-After", "1")) * window_scale)
            ok += r.status_code == 200
    return {"places": len(places), "requests": sent, "ok": ok, "seconds": time.perf_counter() - t0}
