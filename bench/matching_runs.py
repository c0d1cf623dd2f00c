"""The two restaurant guides bought one file at a time into one warehouse vs in one run.

Each way runs `placeflow.run` against its own embedded sandbox (served on loopback) and a fresh
warehouse, with the default options (`--dedupe fuzzy`): once over both guides
(data/samples/restaurants_fodors.csv and restaurants_zagat.csv), and once per guide, Fodor's
then Zagat, into the same warehouse. The places bought are the rows the sandbox billed, by its
own count; the second file's places that the warehouse already knows (fuzzy or exact) cost
nothing. Target: one file at a time buys at most 1% more than one run.

    .venv/bin/python bench/matching_runs.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
GUIDES = (SAMPLES / "restaurants_fodors.csv", SAMPLES / "restaurants_zagat.csv")
KEY = "pf_test_matching_runs"


def bought(batches: list[list[Path]], **options: Any) -> dict[str, Any]:
    """Run each batch of files in turn into one fresh warehouse against one fresh sandbox:
    the sandbox's billed rows and requests, and each run's summary counts."""
    import placeflow
    from placeflow.emulator import KeySpec, Sandbox, SandboxConfig
    from placeflow.fields import RateLimits
    from placeflow.options import RunOptions
    from placeflow.runner.target import Target
    from placeflow.support.redact import Secret

    sandbox = Sandbox(SandboxConfig(keys=(KeySpec(key=KEY, credits=1_000_000),)))
    runs = []
    with tempfile.TemporaryDirectory(prefix="pf-matching-runs-") as tmp, sandbox.serve() as srv:
        target = Target(base_url=srv.base_url, api_key=Secret(KEY), label="bench sandbox",
                        limits=RateLimits.for_tier("paid"))  # fmt: skip
        db = Path(tmp) / "wh.duckdb"
        for files in batches:
            s = placeflow.run(
                [str(f) for f in files], options=RunOptions(**options), db=db, target=target
            )
            runs.append({k: getattr(s, k) for k in ("rows_read", "duplicates", "skipped_fresh",
                                                    "submitted", "fuzzy_duplicates")})  # fmt: skip
        stats = sandbox.stats()
    billed = stats["keys"][KEY]["billed"]
    requests = sum(sum(c.values()) for c in stats["requests"].values())
    return {"billed_rows": billed["rows"], "distinct": billed["distinct_rows"],
            "requests": requests, "runs": runs}  # fmt: skip


def compare(**options: Any) -> dict[str, Any]:
    """One run over both guides vs one file at a time: places bought each way."""
    together = bought([list(GUIDES)], **options)
    apart = bought([[g] for g in GUIDES], **options)
    extra = apart["billed_rows"] / together["billed_rows"] - 1
    return {"one_run": together, "one_file_at_a_time": apart, "extra": extra}


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(ROOT / "src"))
    result = compare()
    print(result)
