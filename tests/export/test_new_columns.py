"""A destination exported to before the warehouse gained a column (the places' names, say) is
sent that table whole by the next export, so no row keeps the new column empty: what
PostgreSQL, a Delta table and the Parquet files hold afterwards."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
from deltalake import CommitProperties, write_deltalake

from placeflow.exporters.delta import WATERMARK
from placeflow.exporters.export import export
from placeflow.support.redact import Secret
from tests.export.dataset import T0
from tests.pgserver import PgServer

NOW = T0 + timedelta(days=1)
OLD_COLUMNS = "* exclude (poi_name, street, address, city, region, postcode, country, latitude," \
    " longitude)"  # fmt: skip


def named(db: Path) -> int:
    """Places of the warehouse, each named (every place of the dataset has its request)."""
    with duckdb.connect(str(db), read_only=True) as con:
        ((count, with_name),) = con.execute(
            "select count(*), count(poi_name) from places_latest"
        ).fetchall()
    assert count == with_name
    return int(count)


def test_postgres_table_without_the_new_columns_is_sent_whole(db: Path, pg_db: PgServer) -> None:
    """PostgreSQL's places_latest lost its identity columns (as one made before them): the next
    export sends all its rows and every place has its name again."""
    password = Secret(pg_db.password)
    export(db, pg_db.url(), ["places_latest"], password=password, now=NOW)
    pg_db.psql("alter table places_latest drop column poi_name, drop column city")
    again = export(db, pg_db.url(), ["places_latest"], password=password, now=NOW)
    assert again.rows == named(db) > 0
    assert pg_db.psql("select count(poi_name), count(city) from places_latest").strip() == (
        f"{named(db)}|{named(db)}"
    )
    assert export(db, pg_db.url(), ["places_latest"], password=password, now=NOW).rows == 0


def test_delta_table_without_the_new_columns_is_merged_whole(db: Path, tmp_path: Path) -> None:
    """A Delta table written before the identity columns (its watermark current) is merged
    whole: the columns are added and every row has them."""
    lake = tmp_path / "lake"
    with duckdb.connect(str(db), read_only=True) as con:
        ((upper,),) = con.execute("select max(outcome_at) from places_latest").fetchall()
        old = con.sql(f"select {OLD_COLUMNS} from places_latest").arrow().read_all()
    props = CommitProperties(custom_metadata={WATERMARK: upper.isoformat()})
    write_deltalake(str(lake / "places_latest"), old, commit_properties=props)
    again = export(db, f"delta://{lake}", ["places_latest"], now=NOW)
    assert again.rows == named(db)
    table = pl.read_delta(str(lake / "places_latest"))
    assert table.height == named(db) and table.get_column("poi_name").null_count() == 0


def test_parquet_files_without_the_new_columns_are_rewritten(db: Path, tmp_path: Path) -> None:
    """Files whose manifest does not list a column the warehouse has are replaced by one file
    of every row."""
    lake = tmp_path / "lake"
    export(db, str(lake), ["places_latest"], now=NOW)
    manifest_path = lake / "_placeflow_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["tables"]["places_latest"]
    entry["columns"] = [c for c in entry["columns"] if c["name"] != "poi_name"]
    manifest_path.write_text(json.dumps(manifest))
    again = export(db, str(lake), ["places_latest"], now=NOW + timedelta(hours=1))
    (table,) = again.tables
    assert table.rows == named(db) and len(table.files) == 1
    assert sorted(p.name for p in lake.rglob("*.parquet")) == ["part-00002.parquet"]
