"""Hand-made result files and planned chunks for the warehouse tests (no sandbox needed)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from placeflow.store.warehouse import insert_frame

STAMP = "2026-11-01T12:00:00Z"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SIGNATURES = {
    "validate": "validate||no-summary",
    "enrich": "enrich|opening_hours,phone,website,existence,open_closed|no-summary",
}


def operational(
    status: str = "open", confidence: float | None = 0.1, reason: str | None = None
) -> dict[str, Any]:
    return {"status": status, "closure_confidence": confidence, "closure_reason": reason}


def validate_line(key: str, *, success: bool = True, **fields: Any) -> dict[str, Any]:
    """A POIValidateResponse line; a failed one carries an error and no verdict."""
    if not success:
        line = {
            "success": False,
            "id": key,
            "existence_confidence": None,
            "operational_status": None,
            "error": "upstream lookup failed",
            "error_code": "EXTERNAL_API_ERROR",
            "request_id": None,
            "validation_timestamp": STAMP,
        }
    else:
        line = {
            "success": True,
            "id": key,
            "existence_confidence": 0.9,
            "operational_status": operational(),
            "error": None,
            "error_code": None,
            "request_id": None,
            "validation_timestamp": STAMP,
        }
    return line | fields


def attribute(
    value: Any, confidence: str | None = "high", as_of: str | None = "2026-10-01"
) -> dict[str, Any]:
    return {
        "value": value,
        "as_of": as_of if value is not None else None,
        "confidence": confidence if value is not None else None,
    }


FULL_ATTRIBUTES: dict[str, Any] = {
    "opening_hours": attribute(
        {"days": {"monday": [{"open": "09:00", "close": "17:00"}], "sunday": "closed"}}
    ),
    "phone": attribute({"number": "+14155550100"}),
    "website": attribute({"url": "https://example.com"}),
    "facebook": attribute({"url": "https://facebook.com/ex", "handle": "ex"}),
    "instagram": attribute({"url": "https://instagram.com/ex", "handle": "ex"}),
    "tiktok": attribute({"url": "https://tiktok.com/@ex", "handle": "@ex"}),
    "email": attribute({"email": "hello@example.com"}),
}


def enrich_line(key: str, *, success: bool = True, **fields: Any) -> dict[str, Any]:
    """A POIEnrichResponse line with every value attribute found, unless overridden."""
    if not success:
        line = {
            "success": False,
            "id": key,
            "attributes": None,
            "status": None,
            "operational_status": None,
            "place_summary": None,
            "enrichment_timestamp": STAMP,
            "error": "upstream lookup failed",
            "error_code": "EXTERNAL_API_ERROR",
            "request_id": None,
        }
    else:
        line = {
            "success": True,
            "id": key,
            "attributes": dict(FULL_ATTRIBUTES),
            "status": {"existence_confidence": 0.93},
            "operational_status": operational(),
            "place_summary": None,
            "enrichment_timestamp": STAMP,
            "error": None,
            "error_code": None,
            "request_id": None,
        }
    return line | fields


def write_lines(path: Path, lines: Iterable[dict[str, Any] | str]) -> Path:
    """A gzipped JSON Lines file of `lines` (dicts are dumped; strings written as they are)."""
    body = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(body.encode(), mtime=0))
    return path


def keys(n: int, prefix: str = "pk") -> list[str]:
    return [f"{prefix}{i:06d}" for i in range(n)]


def add_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    kind: str = "enrich",
    *,
    status: str = "running",
    created_at: datetime = T0,
    **values: Any,
) -> None:
    """A runs row with the default signature of `kind`."""
    row = {
        "run_id": run_id,
        "created_at": created_at,
        "status": status,
        "mode": kind,
        "signature": SIGNATURES[kind],
        "attributes": "" if kind == "validate" else SIGNATURES[kind].split("|")[1],
    } | values
    names = ", ".join(row)
    con.execute(
        f"insert into runs ({names}) values ({', '.join('?' for _ in row)})", list(row.values())
    )


def plan_chunk(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    chunk_no: int,
    places: Sequence[str],
    *,
    kind: str = "enrich",
    route: str = "job",
    status: str = "completed",
    attributes: Sequence[str] | None = None,
) -> None:
    """The run_places and jobs rows of one chunk, as the planner writes them."""
    extra = "" if attributes is None else f',"attributes":{json.dumps(list(attributes))}'
    insert_frame(
        con,
        "run_places",
        pl.DataFrame(
            {
                "run_id": run_id,
                "place_key": list(places),
                "chunk_no": pl.Series([chunk_no] * len(places), dtype=pl.Int32),
                "position": pl.Series(range(len(places)), dtype=pl.Int32),
                "request": [f'{{"id":"{k}","poi_name":"Place {k}"{extra}}}' for k in places],
            }
        ),
    )
    con.execute(
        "insert into jobs (run_id, chunk_no, route, kind, rows, status, batch_id, credits_held,"
        " created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run_id,
            chunk_no,
            route,
            kind,
            len(places),
            status,
            f"job_{run_id}_{chunk_no}" if route == "job" else None,
            len(places) if route == "job" else None,
            T0,
        ],
    )
    if route == "job":
        con.execute(
            "insert into credit_ledger (run_id, chunk_no, ref, kind, credits, recorded_at, note)"
            " values (?, ?, ?, 'hold', ?, ?, 'held at submission')",
            [run_id, chunk_no, f"job_{run_id}_{chunk_no}", len(places), T0],
        )


def table_rows(con: duckdb.DuckDBPyConnection, table: str, order: str) -> list[tuple[Any, ...]]:
    return con.execute(f"select * from {table} order by {order}").fetchall()
