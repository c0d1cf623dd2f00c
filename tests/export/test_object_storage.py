"""Exports to object storage, against moto's S3 server on loopback: Parquet under
s3://BUCKET/PREFIX and Delta under delta+s3://BUCKET/PREFIX, read back from the server."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow.fs as pafs  # type: ignore[import-untyped]  # pyarrow ships no stubs
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # the same
import pytest

from placeflow.errors import OptionsError
from placeflow.exporters.destination import parse_destination
from placeflow.exporters.export import export
from tests.export.conftest import KEYS, TABLES, warehouse_rows
from tests.export.dataset import T0, add_run
from tests.s3server import S3Server, s3_server

__all__ = ["s3_server"]  # the fixture

NOW = T0 + timedelta(days=1)


def _fs(server: S3Server) -> pafs.FileSystem:
    return server.storage.filesystem("s3")


def test_object_destinations_parse_to_their_kind_and_root() -> None:
    """s3:// is Parquet and delta+s3:// Delta, each with its bucket and prefix; no bucket, or a
    query (settings travel as AWS_* variables), is refused."""
    parquet = parse_destination("s3://lake/exports/")
    assert (parquet.kind, parquet.url, parquet.redacted) == (
        "parquet", "s3://lake/exports", "s3://lake/exports"
    )  # fmt: skip
    delta = parse_destination("delta+s3://lake/tables")
    assert (delta.kind, delta.url, delta.redacted) == (
        "delta", "s3://lake/tables", "delta+s3://lake/tables"
    )  # fmt: skip
    for bad in ("s3:///nobucket", "s3://lake/x?endpoint=http://a"):
        with pytest.raises(OptionsError):
            parse_destination(bad)


def test_parquet_export_to_s3_reads_back_as_the_warehouse(db: Path, s3_server: S3Server) -> None:
    """Every table's object under s3://BUCKET/PREFIX holds the warehouse's rows; the manifest
    the server holds lists exactly the objects there; a second export after a new run adds one
    object of the changed rows."""
    bucket = s3_server.new_bucket()
    dest = f"s3://{bucket}/exports/lake"
    summary = export(db, dest, TABLES, now=NOW, storage=s3_server.storage)
    fs = _fs(s3_server)
    manifest = json.loads(fs.open_input_stream(f"{bucket}/exports/lake/_placeflow_manifest.json")
                          .read())  # fmt: skip
    for table in TABLES:
        _, rows = warehouse_rows(db, table)
        (entry,) = manifest["tables"][table]["files"]
        read = pq.read_table(f"{bucket}/exports/lake/{entry['path']}", filesystem=fs)
        keys = [k.strip() for k in KEYS[table].split(",")]
        assert read.num_rows == len(rows) == summary.tables[TABLES.index(table)].rows
        assert sorted(read.select(keys).to_pylist(), key=str) == sorted(
            [dict(zip(keys, r[: len(keys)], strict=True)) for r in _keyed(db, table, keys)],
            key=str,
        )
    listed = sorted(f["path"] for t in manifest["tables"].values() for f in t["files"])
    selector = pafs.FileSelector(f"{bucket}/exports/lake", recursive=True)
    objects = sorted(
        i.path.removeprefix(f"{bucket}/exports/lake/")
        for i in fs.get_file_info(selector)
        if i.type == pafs.FileType.File and i.path.endswith(".parquet")
    )
    assert objects == listed
    con = _connect(db)
    try:
        add_run(con, "run_c", first=0, last=10, at=T0 + timedelta(hours=2))
    finally:
        con.close()
    again = export(db, dest, ["places_latest"], now=NOW + timedelta(hours=1),
                   storage=s3_server.storage)  # fmt: skip
    changed = _changed(db, summary.tables[TABLES.index("places_latest")].watermark_to)
    assert again.tables[0].rows == changed > 0
    (added,) = again.tables[0].files
    assert pq.read_table(f"{bucket}/exports/lake/{added}", filesystem=fs).num_rows == changed


def test_delta_export_to_s3_merges_and_reads_back(db: Path, s3_server: S3Server) -> None:
    """delta+s3://BUCKET/PREFIX: each table a Delta table on the server, read back by
    deltalake with the same storage options; an export after a new run merges its rows by key
    (no place twice) and commits the watermark."""
    from deltalake import DeltaTable

    bucket = s3_server.new_bucket()
    dest = f"delta+s3://{bucket}/tables"
    first = export(db, dest, ["places_latest", "runs"], now=NOW, storage=s3_server.storage)
    options = s3_server.storage.delta_options()
    for table in ("places_latest", "runs"):
        _, rows = warehouse_rows(db, table)
        read = DeltaTable(f"s3://{bucket}/tables/{table}", storage_options=options)
        assert read.to_pyarrow_table().num_rows == len(rows), table
    con = _connect(db)
    try:
        add_run(con, "run_c", first=0, last=10, at=T0 + timedelta(hours=2))
    finally:
        con.close()
    again = export(db, dest, ["places_latest"], now=NOW + timedelta(hours=1),
                   storage=s3_server.storage)  # fmt: skip
    assert again.tables[0].rows == _changed(db, first.tables[0].watermark_to) > 0
    table = DeltaTable(f"s3://{bucket}/tables/places_latest", storage_options=options)
    keys = table.to_pyarrow_table(columns=["place_key"]).column("place_key").to_pylist()
    assert len(keys) == len(set(keys)) == len(warehouse_rows(db, "places_latest")[1])
    (newest,) = table.history(1)
    watermark = again.tables[0].watermark_to
    assert watermark is not None and newest["placeflow.watermark"] == watermark.isoformat()


def _connect(db: Path):  # type: ignore[no-untyped-def]  # a test helper
    from placeflow.store.warehouse import connect

    return connect(db)


def _changed(db: Path, since: object) -> int:
    """The places whose outcome came after `since` (what an incremental export sends)."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        (count,) = con.execute(
            "select count(*) from places_latest where outcome_at > ?", [since]
        ).fetchone() or (0,)
    return int(count)


def _keyed(db: Path, table: str, keys: list[str]) -> list[tuple[object, ...]]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"select {', '.join(keys)} from {table}").fetchall()
