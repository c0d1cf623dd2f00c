"""A real warehouse for the report tests: the sample restaurants, then places with
coordinates in three countries (some rows rejected), both run through placeflow against an
embedded sandbox on loopback; the second run's changes recorded in place_changes."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(str(p) for p in (ROOT / "data" / "samples").glob("*.csv"))
HOSTILE = '<script>alert("x")</script> Café & <b>Bar</b>'

CITIES = (
    ("US", "Chicago", 41.88, -87.63),
    ("FR", "Lyon", 45.76, 4.84),
    ("DE", "Hamburg", 53.55, 9.99),
)


@dataclass(frozen=True)
class Warehouse:
    db: Path
    sample_run: str
    geo_run: str
    geo_rejected: int
    changes: int


def geo_rows() -> list[dict[str, object]]:
    """120 places spread over three cities, plus 6 rows a person would have to fix."""
    rows: list[dict[str, object]] = []
    for i in range(120):
        country, city, lat, lon = CITIES[i % 3]
        rows.append({
            "id": f"g{i}",
            "name": HOSTILE if i == 0 else f"Corner Shop {i}",
            "address": f"{i + 1} Market Street",
            "city": city,
            "country": country,
            "lat": round(lat + (i % 11) * 0.01, 5),
            "lon": round(lon + (i % 7) * 0.01, 5),
        })  # fmt: skip
    for i in range(4):
        rows.append({"id": f"bad{i}", "name": "", "address": "1 Nowhere Road", "city": "Lyon",
                     "country": "FR", "lat": "", "lon": ""})  # fmt: skip
    for i in range(2):
        rows.append({"id": f"far{i}", "name": f"Far Away {i}", "address": "2 Edge Street",
                     "city": "Hamburg", "country": "DE", "lat": 123.4, "lon": 9.9})  # fmt: skip
    return rows


def _record_changes(db: Path, run_id: str) -> int:
    """Changes of three kinds for the geo run, the hostile-named place first."""
    from placeflow.reporting.data import has_table
    from placeflow.store.warehouse import connect

    with connect(db) as con:
        if not has_table(con, "place_changes"):  # before migration 002 lands
            con.execute(
                "create table place_changes (run_id varchar, place_key varchar, field varchar,"
                " kind varchar, old_value varchar, new_value varchar, old_run_id varchar,"
                " outcome_at timestamptz, detected_at timestamptz)"
            )
        keys = [
            str(r[0])
            for r in con.execute(
                "select place_key from run_places where run_id = ? order by chunk_no, position"
                " limit 9",
                [run_id],
            ).fetchall()
        ]
        now = datetime.now(UTC)
        changes = [
            (keys[i], field, kind, old, new)
            for i, (field, kind, old, new) in enumerate(
                [("operational_status", "closed", "open", "closed")] * 4
                + [("phone", "phone", "+1 312 555 0100", "+1 312 555 0199")] * 3
                + [("coordinates", "moved", "41.88,-87.63", "41.89,-87.64")] * 2
            )
        ]
        for key, field_, kind, old, new in changes:
            con.execute(
                "insert into place_changes by name select ? as run_id, ? as place_key,"
                " ? as field, ? as kind, ? as old_value, ? as new_value, ? as old_run_id,"
                " ? as outcome_at, ? as detected_at",
                [run_id, key, field_, kind, old, new, "run_earlier", now, now],
            )
    return len(changes)


def build(db: Path, workdir: Path) -> Warehouse:
    """Run the sample (in 3 jobs) and the geo places through placeflow into `db`."""
    import placeflow
    from placeflow.options import RunOptions
    from placeflow.runner.target import embedded_sandbox

    geo = workdir / "geo_places.csv"
    rows = geo_rows()
    with geo.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with embedded_sandbox() as target:
        sample = placeflow.run(SAMPLES, options=RunOptions(chunk_rows=300), db=db, target=target)
        located = placeflow.run([str(geo)], db=db, target=target)
    changes = _record_changes(db, located.run_id)
    return Warehouse(db, sample.run_id, located.run_id, located.rejected, changes)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """One warehouse for the session's report tests (two real runs against the sandbox)."""
    workdir = tmp_path_factory.mktemp("report-warehouse")
    return build(workdir / "placeflow.duckdb", workdir)
