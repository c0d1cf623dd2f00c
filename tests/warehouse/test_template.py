"""A new warehouse file made from the template (made once, kept for the user) is the warehouse
`migrate` and `apply_views` make in place: the same schema, comments, views, macros and
history, the history stamped when the copy was made."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from placeflow.store import dbfile, warehouse
from placeflow.store.warehouse import connect

CATALOG = {
    "tables": "select table_name, comment, sql from duckdb_tables() order by all",
    "columns": "select table_name, column_name, column_index, data_type, column_default,"
    " is_nullable, comment from duckdb_columns() order by all",
    "views": "select view_name, sql, comment from duckdb_views() where not internal order by all",
    "constraints": "select table_name, constraint_type, constraint_text from duckdb_constraints()"
    " order by all",
    "macros": "select function_name, macro_definition, parameters::varchar from duckdb_functions()"
    " where not internal order by all",
    "indexes": "select index_name, table_name, sql from duckdb_indexes() order by all",
    "history": "select version, name from schema_migrations order by version",
    "views made from": "select digest, views from view_set",
}


def catalog(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in CATALOG.items()}


def in_place(path: Path) -> Path:
    """A warehouse migrated in place, as `connect` makes a process's first new file."""
    con = duckdb.connect(str(path))
    try:
        warehouse.writer_settings(con)
        warehouse.migrate(con)
        warehouse.apply_views(con, force=True)
    finally:
        con.close()
    return path


def test_a_copied_warehouse_is_the_migrated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New files are copies of the template: their catalog is that of a warehouse migrated in
    place, and a copy's history says when it was made."""
    copies: list[bool] = []
    copy = warehouse.copy_template

    def noted(target: Path, make: Callable[[], bytes | None]) -> bool:
        copies.append(copy(target, make))
        return copies[-1]

    monkeypatch.setattr(warehouse, "copy_template", noted)
    for name in ("a", "b"):
        connect(tmp_path / f"{name}.duckdb").close()
    before = datetime.now(UTC)
    copied = tmp_path / "copied.duckdb"
    connect(copied).close()
    assert copies == [True, True, True], "every new file is a copy of the template"
    assert catalog(copied) == catalog(in_place(tmp_path / "in_place.duckdb"))
    assert catalog(copied)["history"] == warehouse.migrations()
    with duckdb.connect(str(copied), read_only=True) as con:
        stamps = con.execute(
            "select min(applied_at), max(applied_at) from schema_migrations"
            " union all select min(applied_at), max(applied_at) from view_set"
        ).fetchall()
    assert all(before <= low <= high <= datetime.now(UTC) for low, high in stamps)
    assert not list(tmp_path.glob(".*.partial")), "no partial copy is left beside it"


def test_an_existing_file_is_never_overwritten_by_the_template(tmp_path: Path) -> None:
    """A path that already holds a warehouse is opened as it is, with what it holds."""
    path = tmp_path / "w.duckdb"
    connect(path).close()
    connect(tmp_path / "other.duckdb").close()  # the template exists from here on
    with duckdb.connect(str(path)) as con:
        con.execute("create table kept as select 42 as answer")
    con = connect(path)
    try:
        assert con.execute("select answer from kept").fetchall() == [(42,)]
    finally:
        con.close()


def test_the_template_is_kept_for_the_next_process(tmp_path: Path) -> None:
    """The template is kept in the user's private template folder under a digest of what makes
    it: another process making a new warehouse copies it instead of migrating, and its copy is
    the same warehouse."""
    connect(tmp_path / "first.duckdb").close()
    folder = dbfile.template_folder()
    assert folder is not None and list(folder.glob("*.duckdb"))
    assert folder.stat().st_mode & 0o077 == 0  # this user's alone
    script = (
        "import sys; from placeflow.store import dbfile, warehouse;"
        " made = []; keep = dbfile.kept;"
        " warehouse.kept = lambda make, sources, version: keep("
        "lambda: made.append(1) or make(), sources, version);"
        " warehouse.connect(sys.argv[1]).close(); print(len(made))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "second.duckdb")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "0", "the other process made no template of its own"
    assert catalog(tmp_path / "second.duckdb") == catalog(tmp_path / "first.duckdb")
