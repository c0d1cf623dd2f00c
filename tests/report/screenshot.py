"""Regenerate docs/report-sample.png: the sample restaurants run through placeflow (in 3
jobs, against an embedded sandbox), its report opened in headless Chromium, screenshotted.

    python3 -m uv run --frozen python tests/report/screenshot.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.*

from tests.report.browser import chromium

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    import duckdb

    import placeflow
    from placeflow.options import RunOptions
    from placeflow.reporting import write_report
    from placeflow.runner.target import embedded_sandbox
    from tests.report.conftest import SAMPLES

    with tempfile.TemporaryDirectory(prefix="report-shot-") as tmp:
        db = Path(tmp) / "placeflow.duckdb"
        with embedded_sandbox() as target:
            run = placeflow.run(SAMPLES, options=RunOptions(chunk_rows=300), db=db, target=target)
        with duckdb.connect(str(db), read_only=True) as con:
            info = write_report(con, run.run_id, Path(tmp) / "report.html")
        with chromium(Path(tmp)) as browser:
            visit = browser.visit(info.path.as_uri())
        assert not visit.errors and len(visit.requests) == 1, (visit.errors, visit.requests)
    out = ROOT / "docs" / "report-sample.png"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(visit.png)
    print(f"{out.relative_to(ROOT)}: report of {run.run_id}, {len(visit.png):,} bytes")


if __name__ == "__main__":
    main()
