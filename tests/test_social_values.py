"""instagram and tiktok values in every shape a service may send (their shapes are not shown in
the spec; docs/spec-readings.md, 19): the warehouse's url and handle columns hold what the
sandbox's own result files say, and the value itself is kept as it came."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import placeflow
from placeflow.emulator import FaultConfig
from placeflow.options import RunOptions
from tests.sandbox_target import served as served_sandbox
from tests.test_run import write_places

KEY = "sk_social_values_paid_key_1234"
SOCIAL = ("facebook", "instagram", "tiktok")


def expected(value: Any) -> tuple[str | None, str | None]:
    """(url, handle) as the value as sent says them."""
    if isinstance(value, dict):
        return value.get("url"), value.get("handle")
    if isinstance(value, str):
        is_url = value.startswith(("http://", "https://"))
        return (value, None) if is_url else (None, value.removeprefix("@"))
    return None, None


@pytest.mark.parametrize("shape", ["object", "url", "handle"])
def test_social_urls_and_handles_are_what_the_service_sent(shape: str, tmp_path: Path) -> None:
    faults = FaultConfig(social_value_shape=shape)
    db = tmp_path / "wh.duckdb"
    with served_sandbox(KEY, faults=faults) as (_, target):
        summary = placeflow.run(
            [str(write_places(tmp_path / "p.csv", 60))],
            options=RunOptions(route="job", dedupe="exact", attributes=SOCIAL),
            db=db,
            target=target,
        )
    assert summary.status in ("completed", "completed_with_failures")
    with duckdb.connect(str(db), read_only=True) as con:
        (path,) = con.execute("select result_path from jobs").fetchall()[0]
        columns = ", ".join(f"{a}_value, {a}_url, {a}_handle" for a in SOCIAL)
        loaded = {
            row[0]: row[1:]
            for row in con.execute(f"select place_key, {columns} from enrichments").fetchall()
        }
    sent = [json.loads(line) for line in gzip.decompress(Path(path).read_bytes()).splitlines()]
    assert len(sent) == len(loaded) == 60
    seen = 0
    for line in sent:
        row = loaded[line["id"]]
        attributes = line.get("attributes") or {}
        for i, name in enumerate(SOCIAL):
            value = (attributes.get(name) or {}).get("value")
            stored, url, handle = row[3 * i : 3 * i + 3]
            assert (json.loads(stored) if stored is not None else None) == value
            assert (url, handle) == expected(value)
            seen += value is not None
    kinds = {type(v) for v in (json.loads(r[3]) for r in loaded.values() if r[3] is not None)}
    assert seen > 0 and kinds == ({dict} if shape == "object" else {str})
