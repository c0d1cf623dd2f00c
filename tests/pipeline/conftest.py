"""Fixtures for the read, normalise and dedupe stages: files written per test, row builders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from placeflow.pipeline.read import OUTPUT_SCHEMA, PLACE_FIELDS

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"

WriteFile = Callable[..., Path]


@pytest.fixture
def write_file(tmp_path: Path) -> WriteFile:
    """Write text (encoded) or bytes to a fresh file under tmp_path and return its path."""

    def write(content: str | bytes, name: str = "places.csv", encoding: str = "utf-8") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode(encoding) if isinstance(content, str) else content
        path.write_bytes(data)
        return path

    return write


def read_frame(*rows: dict[str, Any]) -> pl.DataFrame:
    """A frame shaped like read_inputs' output from partial rows (missing fields are null)."""
    filled = [
        {
            "row_ord": i,
            "source_file": "f.csv",
            "source_row": i + 1,
            "source_id": None,
            **{f: None for f in PLACE_FIELDS},
            "read_error": None,
            **row,
        }
        for i, row in enumerate(rows)
    ]
    return pl.DataFrame(filled, schema=OUTPUT_SCHEMA)


def places_frame(*rows: dict[str, Any]) -> pl.DataFrame:
    """A frame shaped like normalize's `places` output from partial rows."""
    schema: dict[str, pl.DataType] = {
        "row_ord": pl.Int64(),
        "source_file": pl.String(),
        "source_row": pl.Int64(),
        "source_id": pl.String(),
        **{f: pl.String() for f in PLACE_FIELDS if f not in ("latitude", "longitude")},
        "latitude": pl.Float64(),
        "longitude": pl.Float64(),
        "note": pl.String(),
    }
    filled = [
        {"row_ord": i, "source_file": "f.csv", "source_row": i + 1, **row}
        for i, row in enumerate(rows)
    ]
    return pl.DataFrame(filled, schema=schema).select(*schema)
