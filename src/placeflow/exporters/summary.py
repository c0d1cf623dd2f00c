"""What an export did: per table, the rows sent, the watermarks before and after, the files
written (Parquet) and the values made safe for the destination (PostgreSQL)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class TableExport:
    table: str
    rows: int
    watermark_from: datetime | None
    watermark_to: datetime | None
    files: tuple[str, ...] = ()
    made_safe: int = 0
    """Values changed so the destination takes them (PostgreSQL: a NUL character, ...)."""


@dataclass(frozen=True)
class ExportSummary:
    export_id: str
    destination: str
    kind: str
    full: bool
    tables: tuple[TableExport, ...]
    missing: tuple[str, ...]
    """Tables asked for that this warehouse does not have (not exported)."""

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)

    def as_dict(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value else None

        return {
            "export_id": self.export_id,
            "destination": self.destination,
            "kind": self.kind,
            "full": self.full,
            "rows": self.rows,
            "missing": list(self.missing),
            "tables": [
                {
                    "table": t.table,
                    "rows": t.rows,
                    "watermark_from": iso(t.watermark_from),
                    "watermark_to": iso(t.watermark_to),
                    "files": list(t.files),
                    "made_safe": t.made_safe,
                }
                for t in self.tables
            ],
        }
