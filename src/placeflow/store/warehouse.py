"""The DuckDB warehouse: one writer, versioned migrations, views, checks, frames in.

Every statement lives in ``sql/``:

    schema/NNN_name.sql   migrations, applied once each in version order, recorded in
                          schema_migrations, each in its own transaction
    views/*.sql           ``create or replace view``, re-applied on every writable connect
    checks/*.sql          queries that return zero rows when all is well (one purpose each)
    load/, queries/       statements the pipeline runs with parameters

DuckDB lets one process open a database for writing; a second one gets `WarehouseBusy`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from placeflow.config import DEFAULT_DB as DEFAULT_DB  # the default warehouse, re-exported
from placeflow.errors import (
    MigrationError,
    NoWarehouse,
    OptionsError,
    WarehouseError,
)
from placeflow.store.dbfile import (
    Backoff,
    check_warehouse,
    copy_template,
    create_aside,
    gap_taken,
    has_table,
    kept,
    wait_for_gap,
)
from placeflow.support.arrow import scannable

if TYPE_CHECKING:  # polars loads only where a frame is written (a report needs none)
    import polars as pl


MEMORY = ":memory:"

_MIGRATION_FILE = re.compile(r"^(?P<version>\d{3})_(?P<name>[a-z0-9_]+)\.sql$")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
# --- sql/ ------------------------------------------------------------------------------------


def sql_dir() -> Path:
    """sql/ shipped inside the package (a wheel), else the repository checkout's sql/."""
    package = Path(__file__).resolve().parents[1]  # src/placeflow (this is store/warehouse.py)
    for candidate in (package / "sql", package.parents[1] / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise WarehouseError(f"placeflow's sql/ folder is missing (looked beside {package})")


def sql_text(name: str) -> str:
    """The text of ``sql/<name>.sql``, e.g. ``sql_text('checks/double_outcomes')``."""
    relative = name if name.endswith(".sql") else f"{name}.sql"
    if ".." in Path(relative).parts or Path(relative).is_absolute():
        raise OptionsError(f"not a name inside sql/: {name!r}")
    return (sql_dir() / relative).read_text(encoding="utf-8")


def sql_names(folder: str) -> list[str]:
    """The names of the .sql files of a folder of sql/, sorted."""
    return sorted(p.stem for p in (sql_dir() / folder).glob("*.sql"))


# --- connect, migrate, views -----------------------------------------------------------------


def connect(
    path: Path | str, *, read_only: bool = False, wait: float = 0.0, sealed: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable one is created if needed, migrated and its views applied.

    While another process holds it, try again for up to `wait` seconds (a run holds it only
    while writing), then raise `WarehouseBusy`. `sealed` opens it with DuckDB's external access
    disabled: no file but the warehouse is read or written (read_csv, COPY, ATTACH, extensions
    are refused), and its configuration locked: no statement changes a setting, which also
    refuses the calls that would touch files or the process through one (`call
    enable_logging(storage='file', ...)` aborted the process; `set threads`, `pragma
    enable_profiling`).
    """
    in_memory = str(path) == MEMORY
    target = Path(path)
    if not in_memory:
        check_warehouse(path)  # a CSV, a directory or md:... is refused before anything is done
        if read_only and not target.exists():
            raise NoWarehouse(f"no warehouse at {target}: a run creates it")
        if not read_only:
            target.parent.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] | None = None
    if sealed:  # the reader's memory cap set here: nothing can be set once locked
        config = {"enable_external_access": False, "lock_configuration": True,
                  "memory_limit": WAREHOUSE_SETTINGS["memory_limit"]}  # fmt: skip
    copied = not in_memory and not read_only and copy_template(target, _migrated_image)
    if not (in_memory or read_only or copied or target.exists()):
        create_aside(target, _made_at)  # migrated aside: nobody waits on a half-made file
    con = open_database(
        MEMORY if in_memory else target, read_only=read_only, wait=wait, config=config
    )
    if read_only:  # a reader's queries (a report of ten million rows) keep to the cap too
        if not sealed:  # (a sealed one has it from its config)
            con.execute(f"set memory_limit = '{WAREHOUSE_SETTINGS['memory_limit']}'")
        if not in_memory and not has_table(con, "main.run_openings"):
            # From before migration 023 (a reader cannot migrate): no run is being opened, and
            # the queries that leave an opening's parts out read an empty stand-in.
            con.execute("create temp table run_openings (run_id varchar primary key)")
    else:
        try:
            writer_settings(con)
            if copied:  # its migrations and views were applied now, by this copy, made by
                now = datetime.now(UTC)  # this code (`_migrated_image`): none to check
                with transaction(con):
                    con.execute("update schema_migrations set applied_at = ?", [now])
                    con.execute("update view_set set applied_at = ?", [now])
            else:
                apply_views(con, force=bool(migrate(con)))
        except BaseException:
            con.close()
            raise
    return con


def _migrated_image() -> bytes | None:
    """The bytes of a new warehouse file made by `_made_at`: the template of `copy_template`,
    kept for the user under a digest of what makes it (`placeflow.store.dbfile.kept`); None
    when it cannot be made (the new file is then migrated in place)."""
    sources = [Path(__file__)]
    sources += [p for f in ("meta", "schema", "views") for p in sorted((sql_dir() / f).glob("*"))]
    return kept(_made_image, sources, duckdb.__version__)


def _made_image() -> bytes | None:
    try:
        with tempfile.TemporaryDirectory(prefix="placeflow-template-") as folder:
            made = Path(folder) / "template.duckdb"
            _made_at(made)
            return made.read_bytes()
    except (OSError, duckdb.Error, WarehouseError):
        return None


def _made_at(path: Path) -> None:
    """A new warehouse at `path`, migrated and its views applied by `migrate` and
    `apply_views` themselves, then closed."""
    con = open_database(path, read_only=False, wait=0.0)
    try:
        writer_settings(con)
        migrate(con)
        apply_views(con, force=True)
    finally:
        con.close()


CHECKPOINT_THRESHOLD = "512MiB"
"""How much write-ahead log a writer gathers before DuckDB folds it into the database file.
DuckDB's default (16 MB) is less than two chunks' outcomes: every other load paid for a
checkpoint. Closing the connection (a run does whenever it waits) checkpoints too."""

WAREHOUSE_SETTINGS = {"checkpoint_threshold": CHECKPOINT_THRESHOLD, "memory_limit": "512MB",
                      "max_vacuum_tasks": "0", "threads": "1"}  # fmt: skip
"""A writer's DuckDB settings. `memory_limit` bounds its buffer pool and working memory (it
spills past it): DuckDB's default keeps up to 80% of RAM, gigabytes at ten million rows.
`max_vacuum_tasks` 0: a checkpoint merges no row groups (each let-go after a load rewrote the
load before, 0.5 CPU s a close; rows are seldom deleted here). `threads` 1: a run's loads cost
15% less CPU on one thread and take no longer on a busy machine; the work before a run's first
request, which it delays, runs on every core (placeflow.runner.opening.EVERY_CORE)."""


def writer_settings(con: duckdb.DuckDBPyConnection) -> None:
    for name, value in WAREHOUSE_SETTINGS.items():
        con.execute(f"set {name} = '{value}'")


@contextmanager
def settings(con: duckdb.DuckDBPyConnection, **values: str) -> Iterator[None]:
    """The block runs with these DuckDB settings; after it, each is a writer's own again
    (WAREHOUSE_SETTINGS), or DuckDB's default."""
    for name, value in values.items():
        con.execute(f"set {name} = '{value}'")
    try:
        yield
    finally:
        for name in values:
            if name in WAREHOUSE_SETTINGS:
                con.execute(f"set {name} = '{WAREHOUSE_SETTINGS[name]}'")
            else:
                con.execute(f"reset {name}")


FILES = threading.Lock()
"""Opening and closing a database file, one thread of the process at a time: DuckDB refuses
an open that meets another thread's close of the same file ("Unique file handle conflict")."""


def open_database(
    path: Path | str, *, read_only: bool, wait: float, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, trying again for up to `wait` s while another process holds the file;
    a writer's each try no sooner than readers' gap after another process let go of it."""
    backoff = Backoff(path, wait)
    while True:
        tried = 0.0 if read_only else wait_for_gap(path)  # writers taking turns leave a gap
        try:
            with FILES:  # not while another thread of this process closes the file
                con = duckdb.connect(str(path), read_only=read_only, config=config or {})
                if not (tried and gap_taken(path, tried)):
                    return con
                con.close()  # opened in the gap of a let-go made meanwhile: after the gap
            continue
        except (duckdb.IOException, duckdb.ResourceInUseException) as exc:  # in use: store.attach
            if "lock" not in str(exc).lower() and "in use" not in str(exc).lower():
                raise
            backoff.refused(exc)


READ_WAIT = 10.0
"""How long a reader waits for a writer to let go of the warehouse (seconds): a run holds it
for moments at a time, so a longer hold is a process that keeps it (named in the error)."""


@contextmanager
def reading(path: Path | str, *, wait: float = READ_WAIT) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to read the warehouse for the block: read-only, waiting up to `wait` s for
    another process's write; inside a process that has it open for writing, one sharing that."""
    try:
        con = connect(path, read_only=True, wait=wait)
    except duckdb.ConnectionException:  # this process has it open read-write: join that
        con = duckdb.connect(str(path))
    try:
        yield con
    finally:
        con.close()


def migrations() -> list[tuple[str, str]]:
    """(version, name) of every migration file in sql/schema/, in version order."""
    found = []
    for path in (sql_dir() / "schema").glob("*.sql"):
        match = _MIGRATION_FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNN_name.sql")
        found.append((match["version"], match["name"]))
    versions = [v for v, _ in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migration files share a version: {sorted(versions)}")
    return sorted(found)


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply the migrations not yet applied, each in one transaction; return their versions."""
    with transaction(con):
        con.execute(sql_text("meta/schema_migrations"))
    rows = con.execute("select version from schema_migrations").fetchall()
    applied = {str(r[0]) for r in rows}
    known = migrations()
    unknown = applied - {v for v, _ in known}
    if unknown:
        raise MigrationError(
            f"this database has migration(s) {', '.join(sorted(unknown))} that this placeflow"
            " does not know: it was written by a newer version; upgrade placeflow"
        )
    done = []
    for version, name in known:
        if version in applied:
            continue
        with transaction(con):
            con.execute(sql_text(f"schema/{version}_{name}"))
            con.execute(
                "insert into schema_migrations (version, name, applied_at) values (?, ?, ?)",
                [version, name, datetime.now(UTC)],
            )
        done.append(version)
    return done


@functools.cache
def views_digest() -> str:
    """sha256 of every sql/views/ file's name and text, in name order (read once a process)."""
    digest = hashlib.sha256()
    for name in sql_names("views"):
        digest.update(f"{name}\0{sql_text(f'views/{name}')}\0".encode())
    return digest.hexdigest()


def views_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse's views (and macros) were created from today's sql/views/ and
    none of those views is gone since."""
    row = con.execute(
        "select digest = ? and views = (select count(*) from duckdb_views() where not internal)"
        " from view_set",
        [views_digest()],
    ).fetchone()
    return bool(row and row[0])


def apply_views(con: duckdb.DuckDBPyConnection, *, force: bool = False) -> list[str]:
    """(Re)create every view of sql/views/, dependencies first whatever the file order, unless
    the warehouse has them from the same files already (`force`: after a migration, always)."""
    if not force and views_current(con):
        return []
    pending = sql_names("views")
    created: list[str] = []
    while pending:
        failed: list[str] = []
        last: duckdb.Error | None = None
        for name in pending:
            try:
                with transaction(con):
                    con.execute(sql_text(f"views/{name}"))
            except duckdb.CatalogException as exc:  # it reads a view not created yet
                failed.append(name)
                last = exc
            else:
                created.append(name)
        if len(failed) == len(pending):
            raise MigrationError(f"views {', '.join(failed)} cannot be created: {last}")
        pending = failed
    with transaction(con):
        con.execute("delete from view_set")
        con.execute(
            "insert into view_set select ?, (select count(*) from duckdb_views()"
            " where not internal), ?",
            [views_digest(), datetime.now(UTC)],
        )
    return created


# --- transactions, frames ----------------------------------------------------------------


def in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether an explicit transaction is open (autocommit gives each statement a new id)."""
    first = con.execute("select txid_current()").fetchone()
    second = con.execute("select txid_current()").fetchone()
    return first == second


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN, then COMMIT on success or ROLLBACK on any exception; inside an open transaction
    it joins that one (the outermost block commits or rolls back everything)."""
    if in_transaction(con):
        yield
        return
    con.execute("begin transaction")
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):
            con.execute("rollback")
        raise
    con.execute("commit")


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> int:
    """Append a polars frame to `table`, columns matched by name (others get their defaults)."""
    if not _IDENTIFIER.match(table):
        raise OptionsError(f"not a table name: {table!r}")
    if frame.height == 0:
        return 0

    view = f"_placeflow_frame_{secrets.token_hex(4)}"
    # polars' stream gives Arrow's string views, its own layout: DuckDB reads without a copy.
    con.register(view, scannable(frame))
    try:
        con.execute(f'insert into "{table}" by name select * from {view}')  # noqa: S608 - checked names
    finally:
        con.unregister(view)
    return frame.height
