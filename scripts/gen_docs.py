"""Regenerate the generated parts of docs/warehouse.md, docs/exports.md and docs/cli.md, and
sql/current_schema.sql, the snapshot of every table as the migrations leave it.

The warehouse's tables come from the schema itself: each table's, view's and column's DuckDB
comment (`comment on ...` in sql/schema/*.sql and sql/views/*.sql), read from a fresh in-memory
warehouse. The exported tables (docs/exports.md) add what `placeflow.exporters.export.TABLES` says
of each:
its key and incremental column, and each column's PostgreSQL type. The CLI's usage blocks are
`placeflow COMMAND --help`, formatted 100 columns wide. Each generated part sits between
`<!-- gen:table NAME -->` (or `<!-- gen:export NAME -->`, `<!-- gen:help [COMMAND] -->`) and
`<!-- /gen -->`; everything outside the markers is written by hand and left as it is.

Run:  python3 -m uv run --frozen python scripts/gen_docs.py           rewrite the docs
      python3 -m uv run --frozen python scripts/gen_docs.py --check   exit 1 if one is stale

tests/test_docs.py holds the committed docs to what this writes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAREHOUSE_DOC = ROOT / "docs" / "warehouse.md"
EXPORTS_DOC = ROOT / "docs" / "exports.md"
CLI_DOC = ROOT / "docs" / "cli.md"
SCHEMA_SNAPSHOT = ROOT / "sql" / "current_schema.sql"
HELP_COLUMNS = "100"

BLOCK = re.compile(
    r"(?P<open><!-- gen:(?P<kind>table|export|help)(?: (?P<name>[\w-]+))? -->\n)"
    r"(?P<body>.*?)"
    r"(?P<close><!-- /gen -->)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Relation:
    """A table or view of the warehouse, with its comment and its columns'."""

    name: str
    kind: str  # table or view
    comment: str
    columns: tuple[tuple[str, str, str], ...]  # (name, type, comment)


@cache
def relations() -> dict[str, Relation]:
    """Every table and view a fresh warehouse has, by name."""
    from placeflow.store.warehouse import connect

    con = connect(":memory:")
    try:
        found = con.execute(
            "select table_name, 'table', coalesce(comment, '') from duckdb_tables()"
            " where not internal and not temporary"
            " union all select view_name, 'view', coalesce(comment, '') from duckdb_views()"
            " where not internal and not temporary"
        ).fetchall()
        columns = con.execute(
            "select table_name, column_name, lower(data_type), coalesce(comment, '')"
            " from duckdb_columns() where not internal order by table_name, column_index"
        ).fetchall()
    finally:
        con.close()
    by_table: dict[str, list[tuple[str, str, str]]] = {}
    for table, column, data_type, comment in columns:
        by_table.setdefault(table, []).append((column, data_type, comment))
    return {
        name: Relation(name, kind, comment, tuple(by_table.get(name, ())))
        for name, kind, comment in found
    }


def _cell(text: str) -> str:
    """Text as one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def table_block(name: str) -> str:
    """The generated reference of one table or view: heading, comment, columns."""
    rel = relations().get(name)
    if rel is None:
        raise KeyError(f"the warehouse has no table or view {name!r}")
    lines = [f"### `{rel.name}` ({rel.kind})", "", _cell(rel.comment), ""]
    lines += ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{col}` | {_cell(typ)} | {_cell(text)} |" for col, typ, text in rel.columns]
    return "\n".join(lines) + "\n"


def export_block(name: str) -> str:
    """The generated reference of one exported table: heading, key, incremental column, then
    each column with its DuckDB and PostgreSQL types and its meaning."""
    from placeflow.exporters.export import TABLES
    from placeflow.exporters.postgres import pg_type

    rel = relations().get(name)
    spec = TABLES.get(name)
    if rel is None or spec is None:
        raise KeyError(f"placeflow exports no table {name!r}")
    key = ", ".join(f"`{k}`" for k in spec.key)
    lines = [f"### `{name}`", "", _cell(rel.comment), ""]
    lines += [f"Key: {key}. Incremental column: `{spec.cursor}`.", ""]
    lines += ["| column | DuckDB | PostgreSQL | meaning |", "|---|---|---|---|"]
    lines += [
        f"| `{col}` | {_cell(typ)} | {pg_type(typ.upper())} | {_cell(text)} |"
        for col, typ, text in rel.columns
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def _columns(width: str) -> Iterator[None]:
    """argparse wraps help to $COLUMNS: fix it, so the blocks do not depend on the terminal."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def parsers() -> dict[str, argparse.ArgumentParser]:
    """`placeflow`'s parser ('') and each subcommand's, by command name."""
    from placeflow.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


def help_block(command: str) -> str:
    """The generated usage of one command: its `--help`, as printed."""
    found = parsers()
    if command not in found:
        raise KeyError(f"placeflow has no command {command!r}")
    with _columns(HELP_COLUMNS):
        text = found[command].format_help()
    invocation = f"placeflow {command} --help" if command else "placeflow --help"
    return f"```text\n$ {invocation}\n{text.rstrip()}\n```\n"


def regenerate(text: str) -> str:
    """The document with every generated block written afresh."""

    def block(match: re.Match[str]) -> str:
        name = match["name"] or ""
        kind = match["kind"]
        body = (
            table_block(name)
            if kind == "table"
            else export_block(name)
            if kind == "export"
            else help_block(name)
        )
        return f"{match['open']}{body}{match['close']}"

    return BLOCK.sub(block, text)


def blocks(text: str, kind: str) -> list[str]:
    """The names of a document's generated blocks of one kind, in order."""
    return [m["name"] or "" for m in BLOCK.finditer(text) if m["kind"] == kind]


def _sql_comment(text: str) -> str:
    return " ".join(text.split())


def schema_snapshot() -> str:
    """Every table of a fresh warehouse as one `create table`, its columns one a line with their
    comments, then its constraints; the views by name and file. Generated: never edited."""
    from placeflow.store.warehouse import connect

    con = connect(":memory:")
    try:
        tables = con.execute(
            "select table_name, coalesce(comment, '') from duckdb_tables()"
            " where not internal and schema_name = 'main' order by table_name"
        ).fetchall()
        views = con.execute(
            "select view_name, coalesce(comment, '') from duckdb_views()"
            " where not internal and schema_name = 'main' order by view_name"
        ).fetchall()
        out = [
            "-- The current schema of the warehouse: every table as sql/schema/'s migrations",
            "-- leave it, generated by scripts/gen_docs.py from a fresh warehouse",
            "-- (tests/test_docs.py holds it to them). Read it here; change it with a new",
            "-- migration, never in this file.",
            "",
        ]
        for table, comment in tables:
            columns = con.execute(
                "select column_name, data_type, is_nullable, column_default,"
                " coalesce(comment, '') from duckdb_columns()"
                " where table_name = ? and schema_name = 'main' order by column_index",
                [table],
            ).fetchall()
            constraints = con.execute(
                "select constraint_text from duckdb_constraints()"
                " where table_name = ? and schema_name = 'main'"
                " and constraint_type not in ('NOT NULL') order by constraint_index",
                [table],
            ).fetchall()
            if comment:
                out.append(f"-- {_sql_comment(comment)}")
            out.append(f"create table {table} (")
            lines = []
            for name, kind, nullable, default, note in columns:
                line = f"    {name} {kind.lower()}"
                line += "" if nullable else " not null"
                line += f" default {default}" if default is not None else ""
                lines.append((line, _sql_comment(note)))
            lines += [(f"    {text}", "") for (text,) in constraints]
            for i, (line, note) in enumerate(lines):
                comma = "," if i < len(lines) - 1 else ""
                out.append(f"{line}{comma}" + (f"  -- {note}" if note else ""))
            out += [");", ""]
        out.append("-- views (each defined in sql/views/NAME.sql):")
        out += [f"--   {view}" + (f": {_sql_comment(c)}" if c else "") for view, c in views]
        return "\n".join(out) + "\n"
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    cli.add_argument("--check", action="store_true", help="only say which docs are stale")
    args = cli.parse_args(argv)
    stale = []
    for doc in (WAREHOUSE_DOC, EXPORTS_DOC, CLI_DOC):
        text = doc.read_text(encoding="utf-8")
        fresh = regenerate(text)
        if fresh != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(fresh, encoding="utf-8")
    snapshot = schema_snapshot()
    current = SCHEMA_SNAPSHOT.read_text(encoding="utf-8") if SCHEMA_SNAPSHOT.exists() else ""
    if snapshot != current:
        stale.append(SCHEMA_SNAPSHOT.relative_to(ROOT))
        if not args.check:
            SCHEMA_SNAPSHOT.write_text(snapshot, encoding="utf-8")
    for doc in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {doc}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
