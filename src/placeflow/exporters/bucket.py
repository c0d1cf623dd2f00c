"""Parquet destination in object storage (``s3://BUCKET/PREFIX``): the layout of
`placeflow.exporters.parquet`, written through pyarrow's file system of the store.

An object appears whole when its upload ends (S3's PUT), so each table's file is written by
DuckDB to a local temporary file and uploaded under its final key: no temporary name, no
rename. The manifest, uploaded last, is the commit point as on a disk: an object under a
table's prefix that it does not list is an interrupted export's orphan, removed by the next.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from placeflow.exporters import Step, TablePlan
from placeflow.exporters.parquet import FORMAT, MANIFEST, Written, manifest_with

if TYPE_CHECKING:
    import pyarrow.fs as pafs  # type: ignore[import-untyped]  # pyarrow ships no stubs


@dataclass(frozen=True)
class Bucket:
    """A destination root in object storage: its file system and the root's path in it
    (``bucket/prefix``), and its URL as printed."""

    fs: pafs.FileSystem
    root: str
    url: str

    def key(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def read_manifest(self) -> dict[str, Any]:
        """The destination's manifest, or an empty one when nothing was exported there yet."""
        import pyarrow.fs as pafs

        if self.fs.get_file_info(self.key(MANIFEST)).type != pafs.FileType.File:
            return {"format": FORMAT, "tables": {}}
        with self.fs.open_input_stream(self.key(MANIFEST)) as stream:
            data: dict[str, Any] = json.loads(stream.read().decode("utf-8"))
        return data

    def write_table(
        self, con: duckdb.DuckDBPyConnection, plan: TablePlan, *, seq: int, day: str, step: Step
    ) -> Written | None:
        """Write the plan's rows as one object; None when it has no rows (nothing written)."""
        import pyarrow.fs as pafs

        if plan.rows == 0:
            return None
        relative = f"{plan.name}/export_date={day}/part-{seq:05d}.parquet"
        with tempfile.TemporaryDirectory(prefix="placeflow-export-") as folder:
            local = Path(folder) / "part.parquet"
            target = str(local).replace("'", "''")
            con.execute(f"copy ({plan.select()}) to '{target}' (format parquet, compression zstd)")
            step(f"parquet:written:{plan.name}")
            size = local.stat().st_size
            pafs.copy_files(
                str(local),
                self.key(relative),
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=self.fs,
            )
        step(f"parquet:renamed:{plan.name}")
        return Written(relative, plan.rows, size)

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
        """Record the table's new object and watermark in the manifest (one upload), then
        remove the objects the manifest does not list; returns the new manifest."""
        new = manifest_with(manifest, plan, written, full=full, exported_at=exported_at)
        if new != manifest:
            body = (json.dumps(new, indent=2) + "\n").encode("utf-8")
            with self.fs.open_output_stream(self.key(MANIFEST)) as stream:
                stream.write(body)
            step(f"parquet:manifest:{plan.name}")
        keep = {f["path"] for f in new["tables"][plan.name]["files"]}
        self.remove_orphans(plan.name, keep)
        return new

    def remove_orphans(self, table: str, keep: set[str]) -> list[str]:
        """Delete the objects under the table's prefix that the manifest does not list."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.key(table), recursive=True, allow_not_found=True)
        removed = []
        for info in self.fs.get_file_info(selector):
            relative = info.path[len(self.root) + 1 :]
            if info.type == pafs.FileType.File and relative not in keep:
                self.fs.delete_file(info.path)
                removed.append(relative)
        return removed
