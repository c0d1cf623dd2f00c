"""Parquet destination: a folder per table, zstd files written by DuckDB, renamed into place.

Layout under the destination root::

    _placeflow_manifest.json                     what is there: files, rows, watermarks, types
    places_latest/export_date=2026-11-23/part-00001.parquet
    places_latest/_tmp-00002/part.parquet.tmp    only while an export writes (never *.parquet)

Each export of a table writes one file of the rows that changed (`--full`: of every row) to a
temporary name, fsyncs it and renames it into its Hive partition, so a reader never sees half a
file. The manifest (written the same way) is the commit point: files it does not list are
orphans of an interrupted export and are removed by the next one. File names are numbered by
the manifest's count of exports, so an interrupted export run again writes the same names.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import duckdb

from placeflow.exporters import Step, TablePlan

MANIFEST = "_placeflow_manifest.json"
FORMAT = "placeflow-export/1"


@dataclass(frozen=True)
class Written:
    path: str
    """Relative to the destination root, with forward slashes."""
    rows: int
    bytes: int


class ParquetFiles(Protocol):
    """Where an export's Parquet files go: `LocalFiles` (a folder) or
    `placeflow.exporters.bucket.Bucket` (a prefix in object storage)."""

    def read_manifest(self) -> dict[str, Any]: ...

    def write_table(
        self, con: duckdb.DuckDBPyConnection, plan: TablePlan, *, seq: int, day: str, step: Step
    ) -> Written | None: ...

    def commit_table(
        self,
        manifest: dict[str, Any],
        plan: TablePlan,
        written: Written | None,
        *,
        full: bool,
        exported_at: datetime,
        step: Step,
    ) -> dict[str, Any]: ...


def read_manifest(root: Path) -> dict[str, Any]:
    """The destination's manifest, or an empty one when nothing was exported there yet."""
    path = root / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "tables": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def table_watermark(manifest: dict[str, Any], table: str) -> datetime | None:
    entry = manifest["tables"].get(table)
    if not entry or not entry.get("watermark"):
        return None
    return datetime.fromisoformat(entry["watermark"])


def lacks(manifest: dict[str, Any], table: str, columns: set[str]) -> bool:
    """Whether the destination's files of `table` lack one of `columns` (exported before the
    warehouse gained it): the table is then written whole, replacing them."""
    entry = manifest["tables"].get(table)
    if not entry or "columns" not in entry:
        return False
    return not columns <= {c["name"] for c in entry["columns"]}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(tmp: Path, final: Path) -> None:
    """Rename tmp over final (atomic on one file system) and make the rename durable."""
    _fsync(tmp)
    os.replace(tmp, final)
    _fsync(final.parent)


def write_table(
    con: duckdb.DuckDBPyConnection, root: Path, plan: TablePlan, *, seq: int, day: str, step: Step
) -> Written | None:
    """Write the plan's rows as one file; None when it has no rows (nothing is written)."""
    if plan.rows == 0:
        return None
    table_dir = root / plan.name
    tmp_dir = table_dir / f"_tmp-{seq:05d}"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir(parents=True)
    tmp = tmp_dir / "part.parquet.tmp"
    target = str(tmp).replace("'", "''")
    con.execute(f"copy ({plan.select()}) to '{target}' (format parquet, compression zstd)")
    step(f"parquet:written:{plan.name}")
    final = table_dir / f"export_date={day}" / f"part-{seq:05d}.parquet"
    final.parent.mkdir(parents=True, exist_ok=True)
    _replace(tmp, final)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    step(f"parquet:renamed:{plan.name}")
    return Written(final.relative_to(root).as_posix(), plan.rows, final.stat().st_size)


def manifest_with(
    manifest: dict[str, Any],
    plan: TablePlan,
    written: Written | None,
    *,
    full: bool,
    exported_at: datetime,
) -> dict[str, Any]:
    """The manifest with the table's new file and watermark (what `commit_table` writes)."""
    tables = dict(manifest["tables"])
    entry = dict(tables.get(plan.name) or {"exports": 0, "files": []})
    if written is not None:
        files = [] if full else list(entry["files"])
        files.append(
            {
                "path": written.path,
                "rows": written.rows,
                "bytes": written.bytes,
                "watermark_from": plan.lower.isoformat() if plan.lower else None,
                "watermark_to": plan.upper.isoformat() if plan.upper else None,
                "full": full,
                "exported_at": exported_at.isoformat(),
            }
        )
        entry.update(exports=entry["exports"] + 1, files=files)
    if plan.upper is not None:
        entry["watermark"] = plan.upper.isoformat()
    entry.update(
        key=list(plan.key),
        incremental_column=plan.cursor,
        columns=[{"name": c.name, "type": c.duck_type} for c in plan.columns],
    )
    tables[plan.name] = entry
    return {"format": FORMAT, "tables": dict(sorted(tables.items()))}


def commit_table(
    root: Path,
    manifest: dict[str, Any],
    plan: TablePlan,
    written: Written | None,
    *,
    full: bool,
    exported_at: datetime,
    step: Step,
) -> dict[str, Any]:
    """Record the table's new file and watermark in the manifest (atomically), then remove what
    the manifest does not list; returns the new manifest."""
    new = manifest_with(manifest, plan, written, full=full, exported_at=exported_at)
    if new != manifest:
        tmp = root / f"{MANIFEST}.tmp"
        tmp.write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
        _replace(tmp, root / MANIFEST)
        step(f"parquet:manifest:{plan.name}")
    remove_orphans(root, plan.name, {f["path"] for f in new["tables"][plan.name]["files"]})
    return new


@dataclass(frozen=True)
class LocalFiles:
    """A destination root on this machine's disk, as `placeflow.exporters.bucket.Bucket` is
    one in object storage: the same four steps of an export."""

    path: Path

    def read_manifest(self) -> dict[str, Any]:
        self.path.mkdir(parents=True, exist_ok=True)
        return read_manifest(self.path)

    def write_table(
        self, con: duckdb.DuckDBPyConnection, plan: TablePlan, *, seq: int, day: str, step: Step
    ) -> Written | None:
        return write_table(con, self.path, plan, seq=seq, day=day, step=step)

    def commit_table(
        self,
        manifest: dict[str, Any],
        plan: TablePlan,
        written: Written | None,
        *,
        full: bool,
        exported_at: datetime,
        step: Step,
    ) -> dict[str, Any]:
        return commit_table(
            self.path, manifest, plan, written, full=full, exported_at=exported_at, step=step
        )


def next_seq(manifest: dict[str, Any], table: str) -> int:
    entry = manifest["tables"].get(table)
    return int(entry["exports"]) + 1 if entry else 1


def remove_orphans(root: Path, table: str, keep: set[str]) -> list[str]:
    """Delete files under the table's folder that the manifest does not list (an interrupted
    export's, or those a --full export replaced) and its temporary folders."""
    table_dir = root / table
    removed: list[str] = []
    if not table_dir.is_dir():
        return removed
    for tmp_dir in table_dir.glob("_tmp-*"):
        shutil.rmtree(tmp_dir, ignore_errors=True)
        removed.append(tmp_dir.relative_to(root).as_posix())
    for path in sorted(table_dir.rglob("*.parquet")):
        relative = path.relative_to(root).as_posix()
        if relative not in keep:
            path.unlink()
            removed.append(relative)
    for folder in table_dir.iterdir():
        if folder.is_dir():
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
    return removed
