"""Destinations of warehouse loads: Parquet files (DuckDB's own writer), PostgreSQL (ADBC) and
Delta tables (delta-rs), and the destination URLs that name them (`destination`).

Each takes a `TablePlan` (which rows of which table, typed columns) from
`placeflow.exporters.export`
and reports what it wrote; none records anything in the warehouse (export does, after the
destination has committed).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from placeflow.errors import OptionsError

Step = Callable[[str], None]
"""Called at each point of an export where a crash is worth testing (`parquet:renamed:...`)."""

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


def quote(name: str) -> str:
    """A checked, double-quoted identifier (the names come from the warehouse's catalog)."""
    if not _IDENTIFIER.match(name):
        raise OptionsError(f"not an identifier placeflow exports: {name!r}")
    return f'"{name}"'


def timestamp_literal(value: datetime) -> str:
    """A DuckDB/PostgreSQL timestamptz literal of an aware datetime (microseconds kept)."""
    if value.tzinfo is None:
        raise OptionsError("watermarks are aware datetimes")
    return f"timestamptz '{value.isoformat()}'"


@dataclass(frozen=True)
class Column:
    name: str
    duck_type: str
    """DuckDB's type name (VARCHAR, DOUBLE, TIMESTAMP WITH TIME ZONE, JSON, ...)."""


@dataclass(frozen=True)
class TablePlan:
    """What one export sends of one table: rows with lower < cursor <= upper, keyed."""

    name: str
    key: tuple[str, ...]
    cursor: str
    columns: tuple[Column, ...]
    lower: datetime | None
    upper: datetime | None
    rows: int

    def select(self, *, native: frozenset[str] | None = None) -> str:
        """The DuckDB query of the plan's rows, ordered by key (deterministic files); with
        `native`, columns of any other DuckDB type travel as text (cast to varchar)."""
        cols = []
        for c in self.columns:
            as_text = native is not None and c.duck_type not in native
            cols.append(
                f"cast({quote(c.name)} as varchar) as {quote(c.name)}" if as_text else quote(c.name)
            )
        return (
            f"select {', '.join(cols)} from {quote(self.name)}"  # noqa: S608 - checked names
            f" where {self.where()} order by {', '.join(quote(k) for k in self.key)}"
        )

    def where(self) -> str:
        if self.upper is None:
            return "false"
        bound = f"({self.cursor}) <= {timestamp_literal(self.upper)}"
        if self.lower is None:
            return bound
        return f"({self.cursor}) > {timestamp_literal(self.lower)} and {bound}"


ARROW_NATIVE = frozenset(
    {
        "VARCHAR",
        "BOOLEAN",
        "DOUBLE",
        "FLOAT",
        "BIGINT",
        "INTEGER",
        "SMALLINT",
        "TINYINT",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP WITH TIME ZONE",
        "TIME",
    }
)
"""DuckDB types that reach PostgreSQL through Arrow as they are; others travel as text."""
