"""The pipeline benchmark script runs end to end at a tiny size (a smoke test, not a timed one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pipeline_bench_smoke_writes_results(tmp_path: Path) -> None:
    """`bench/pipeline_bench.py --smoke` builds inputs, serves sandboxes and writes its report."""
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pipeline_bench.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text()
    assert "- command: `" in text and "--smoke" in text
    assert "| naive loop, one place per request | 30 | 30 (30 + 0) | 1000.00 |" in text
    assert "| naive loop, enrich-batch of 10 | 30 | 3 (3 + 0) | 100.00 |" in text
