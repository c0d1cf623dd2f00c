"""Micro-benchmark of the sandbox's outcome synthesis: render_job_lines rows/s, and with the
gzip + sha256 the job file also needs (the sandbox's budget is >= 50,000 rows/s all in).

Run: .venv/bin/python bench/sandbox_synth.py [rows]

The shared 2-core VM this was written on changes speed by up to ~1.8x from minute to minute, so
the first line times a fixed pure-Python loop: compare figures only at similar calibration.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
import time
import timeit
from typing import Any

from placeflow.emulator.synth import SynthSettings, render_job_lines

CITIES = ("Springfield", "Portland", "Austin", "Madison", "Salem", "Dayton", "Fresno", "Tulsa")


def places(n: int, *, enrich: bool, **extra: Any) -> list[dict[str, Any]]:
    """Job rows shaped like a pydantic model_dump of the request (every field present)."""
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"row-{i}",
            "poi_name": f"Cafe Number {i}",
            "country": "US",
            "address": None,
            "latitude": 40.0 + i * 1e-5,
            "longitude": -75.0 - i * 1e-5,
            "street": f"{i} Main St",
            "city": CITIES[i % len(CITIES)],
            "region": "OR",
            "postcode": f"{97000 + i % 999}",
        }
        if enrich:
            row |= {"attributes": None, "include_summary": False, "response_format": "attributes"}
        rows.append(row | extra)
    return rows


def measure(label: str, kind: Any, pois: list[dict[str, Any]], repeat: int = 7) -> None:
    settings = SynthSettings(seed=7)
    best = best_all = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        body, _ = render_job_lines(kind, pois, settings=settings, now="2026-09-21T10:00:00.000Z")
        t1 = time.perf_counter()
        gz = gzip.compress(body, compresslevel=5, mtime=0)
        hashlib.sha256(gz).hexdigest()
        t2 = time.perf_counter()
        best, best_all = min(best, t1 - t0), min(best_all, t2 - t0)
    n = len(pois)
    print(
        f"{label:<34} render {n / best:>9,.0f} rows/s   "
        f"render+gzip+sha256 {n / best_all:>9,.0f} rows/s   ({len(body) / n:.0f} B/row)"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    calib = min(timeit.repeat("sum(range(1000))", number=2_000, repeat=5)) / 2_000 * 1e6
    print(f"calibration: sum(range(1000)) takes {calib:.1f} us (lower = faster machine phase)")
    measure("validate", "validate", places(n, enrich=False))
    measure("enrich (default attributes)", "enrich", places(n, enrich=True))
    measure(
        "enrich (all 9, summary)",
        "enrich",
        places(
            n,
            enrich=True,
            include_summary=True,
            attributes=[
                "opening_hours",
                "phone",
                "website",
                "facebook",
                "instagram",
                "tiktok",
                "email",
                "existence",
                "open_closed",
            ],
        ),
    )
    measure(
        "enrich (default, cell format)", "enrich", places(n, enrich=True, response_format="cell")
    )


if __name__ == "__main__":
    main()
