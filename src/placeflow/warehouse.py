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

import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import duckdb

from placeflow.dbfile import check_warehouse
from placeflow.errors import NoWarehouse, OptionsError, WarehouseError

if TYPE_CHECKING:  # polars loads only where a frame is written (a report needs none)
    import polars as pl

    from placeflow.api.client import PlaceApiClient
    from placeflow.api.limiter import RateGate

DEFAULT_DB = "data/placeflow.duckdb"
"""Where runs land unless told otherwise (the CLI's and the flow's default)."""
MEMORY = ":memory:"

_MIGRATION_FILE = re.compile(r"^(?P<version>\d{3})_(?P<name>[a-z0-9_]+)\.sql$")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


class WarehouseBusy(WarehouseError):
    """Another process holds the database: DuckDB allows one writer at a time."""

    def __init__(self, path: Path, detail: str) -> None:
        found = _LOCK_PID.search(detail)
        holder = f"process {found.group(1)}" if found else "another process"
        said = holder_of(path)
        if said and (found is None or said.startswith(f"process {found.group(1)} ")):
            holder = said
        super().__init__(
            f"the warehouse {path} is in use by {holder} (DuckDB lets one process open a"
            " database at a time). Wait for that run to finish, or stop it, then try again;"
            " or point this command at another database file"
        )
        self.path = path
        self.detail = detail


class MigrationError(WarehouseError):
    """The database and the migrations in sql/schema/ do not fit together."""


# --- sql/ ------------------------------------------------------------------------------------


def sql_dir() -> Path:
    """sql/ shipped inside the package (a wheel), else the repository checkout's sql/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "sql", here.parents[1] / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise WarehouseError(f"placeflow's sql/ folder is missing (looked beside {here})")


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
    are refused), and no statement can enable it again.
    """
    in_memory = str(path) == MEMORY
    target = Path(path)
    if not in_memory:
        check_warehouse(target)  # a CSV or a directory is refused before anything is done
        if read_only and not target.exists():
            raise NoWarehouse(f"no warehouse at {target}: a run creates it")
        if not read_only:
            target.parent.mkdir(parents=True, exist_ok=True)
    config = {"enable_external_access": False} if sealed else None
    con = _open(MEMORY if in_memory else target, read_only=read_only, wait=wait, config=config)
    if read_only:  # a reader's queries (a report of ten million rows) keep to the cap too
        con.execute(f"set memory_limit = '{WAREHOUSE_SETTINGS['memory_limit']}'")
    else:
        try:
            _writer_settings(con)
            migrate(con)
            apply_views(con)
        except BaseException:
            con.close()
            raise
    return con


CHECKPOINT_THRESHOLD = "512MiB"
"""How much write-ahead log a writer gathers before DuckDB folds it into the database file.
DuckDB's default (16 MB) is less than two chunks' outcomes: every other load paid for a
checkpoint. Closing the connection (a run does whenever it waits) checkpoints too."""


WAREHOUSE_SETTINGS = {"checkpoint_threshold": CHECKPOINT_THRESHOLD, "memory_limit": "512MB"}
"""A writer's DuckDB settings. `memory_limit` bounds the database's buffer pool and its
queries' working memory (it spills to disk past it): by default DuckDB keeps up to 80% of RAM
and caches every block it reads, and a run of ten million rows, reading each chunk's requests
and outcomes once, kept gigabytes of them."""


def _writer_settings(con: duckdb.DuckDBPyConnection) -> None:
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


READERS_TURN = 0.3
"""Seconds a writer that let go for readers (`Warehouse.release(held_over=...)`) stays away."""
WRITE_WAIT = 120.0
"""How long a run waits for readers to let go before it writes (seconds)."""


class Warehouse:
    """A run's connection to the warehouse, held only while it is used, so other processes can
    read between writes: `release()` closes it (unless a transaction is open) and the next
    statement opens it again (waiting up to `wait` s for another process). Every attribute is
    the open connection's, so it stands wherever a connection is taken; `with` closes it.

    Each thread has a connection of its own (a run's sender writes beside its loads: DuckDB
    keeps their transactions apart), and `release()` lets go of the calling thread's alone: the
    file is free for other processes once every thread has let go."""

    def __init__(self, path: Path | str, *, wait: float = WRITE_WAIT) -> None:
        self.path = Path(path)
        self.wait = wait
        self._own = threading.local()
        self._lock = threading.Lock()
        self._open: list[duckdb.DuckDBPyConnection] = []
        self._own.con = connect(path, wait=wait)  # migrates once
        self._own.since = time.monotonic()
        self._open.append(self._own.con)
        self.opened = 1
        """How many times a connection was opened (a test reads it)."""
        self.on_wait: Callable[[], None] | None = None
        """Called by a thread about to wait with the warehouse let go (a run's heartbeat)."""
        _note_holder(self.path)

    @property
    def _con(self) -> duckdb.DuckDBPyConnection | None:
        """The calling thread's connection, if it holds one."""
        con: duckdb.DuckDBPyConnection | None = getattr(self._own, "con", None)
        return con

    def live(self) -> duckdb.DuckDBPyConnection:
        """The calling thread's open connection, opened again if it was released (not before
        READERS_TURN has passed since a release made for readers: see `release`)."""
        con = self._con
        if con is None:
            turn = getattr(self._own, "readers_until", 0.0) - time.monotonic()
            if turn > 0:
                time.sleep(turn)  # the readers' turn, bounded: READERS_TURN at most
            con = _open(self.path, read_only=False, wait=self.wait)
            _writer_settings(con)
            with self._lock:
                self._open.append(con)
                self.opened += 1
            self._own.con = con
            self._own.since = time.monotonic()
            _note_holder(self.path)
        return con

    def release(self, *, held_over: float = 0.0) -> None:
        """Close the calling thread's connection now unless a transaction is open on it or it
        is `held` (it reopens on next use); with `held_over`, only once it has been open that
        many seconds, and then not opened again for READERS_TURN seconds: a writer that never
        waits (the synchronous route, its own work slower than the key's rate) still gives
        other processes a turn that a reader trying every quarter of a second meets."""
        con = self._con
        if con is None or in_transaction(con) or getattr(self._own, "held", 0) > 0:
            return
        if held_over:
            if time.monotonic() - getattr(self._own, "since", 0.0) < held_over:
                return
            self._own.readers_until = time.monotonic() + READERS_TURN
        self._forget(con)

    def waiting(self) -> None:
        """The calling thread is about to wait: `on_wait`, then let go of its connection."""
        if self.on_wait is not None and self._con is not None:
            self.on_wait()
        self.release()

    @contextmanager
    def held(self) -> Iterator[None]:
        """In the block, the calling thread's connection is not let go (`release` does
        nothing): its temporary tables (a run's staging) live as long as the connection."""
        self._own.held = getattr(self._own, "held", 0) + 1
        try:
            yield
        finally:
            self._own.held -= 1

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            held, self._open = self._open, []
        for con in held:
            con.close()
        self._own.con = None

    def _forget(self, con: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            self._open = [c for c in self._open if c is not con]
        with _FILES:  # not while another thread of this process opens the file
            con.close()
        self._own.con = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live(), name)

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def held_while_writing(wh: Warehouse, api: PlaceApiClient) -> duckdb.DuckDBPyConnection:
    """The run's connection, let go whenever the client waits (polls, backoffs) and before
    every request, so that `placeflow runs` and read-only connections of other processes can
    read between writes: a thread that waits lets go of its own connection
    (see `Warehouse`), after `wh.on_wait` (the owner's heartbeat). Letting go checkpoints what
    the thread wrote (half a second after a loaded chunk): that time comes off the wait, so a
    poll planned for when a job ends is not made late by it."""
    wait, clock = api.sleep, api.clock

    def sleep(seconds: float) -> None:
        before = clock()
        wh.waiting()
        wait(max(0.0, seconds - (clock() - before)))

    api.sleep = sleep
    api.limiter = _ReleasingGate(api.limiter, wh)
    return cast(duckdb.DuckDBPyConnection, wh)  # it stands for the connection it opens


class _ReleasingGate:
    """A rate gate that lets go of the warehouse before every request: an answer may take
    seconds (a slow service, a held connection, a 10,000-row upload), and no other process
    should wait for it to read or to write."""

    def __init__(self, gate: RateGate, wh: Warehouse) -> None:
        self._gate = gate
        self._wh = wh

    def acquire(self) -> float:
        self._wh.waiting()
        return self._gate.acquire()

    def delay(self) -> float:
        return self._gate.delay()

    def defer(self, seconds: float) -> None:
        self._gate.defer(seconds)

    def answered(self) -> None:
        self._gate.answered()


def let_go(con: duckdb.DuckDBPyConnection, *, held_over: float = 0.0) -> None:
    """Let other processes read: release a run's `Warehouse` connection of this thread when it
    has been held `held_over` seconds or more (a bare connection is kept)."""
    if isinstance(con, Warehouse):
        con.release(held_over=held_over)


def workdir_for(db: Path | str, run_id: str) -> Path:
    """Where a run's verified result files live: beside the database, per run."""
    return Path(db).parent / "runs" / run_id


_FILES = threading.Lock()
"""Opening and closing a database file, one thread of the process at a time: DuckDB refuses
an open that meets another thread's close of the same file ("Unique file handle conflict")."""


def _open(
    path: Path | str, *, read_only: bool, wait: float, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, trying again for up to `wait` s while another process holds the file."""
    deadline = time.monotonic() + wait
    pause = 0.02
    while True:
        try:
            with _FILES:  # not while another thread of this process closes the file
                return duckdb.connect(str(path), read_only=read_only, config=config or {})
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() + pause > deadline:
                raise WarehouseBusy(Path(path), str(exc)) from exc
        time.sleep(pause)  # bounded: the holder writes for moments, then lets go
        pause = min(pause * 2, 0.5)


READ_WAIT = 10.0
"""How long a reader waits for a writer to let go of the warehouse (seconds): a run holds it
for moments at a time, so a longer hold is a process that keeps it (named in the error)."""


def _holder_file(path: Path | str) -> Path:
    return Path(f"{path}.holder")


def _note_holder(path: Path | str) -> None:
    """Say beside the database which process writes it (DuckDB's lock error names only a pid):
    the command's first two words, its pid and when, so a reader turned away can say who.
    Best effort: a read-only directory just leaves the pid."""
    if str(path) == MEMORY:
        return
    words = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv[:2]))
    since = f"{datetime.now(UTC):%H:%M:%S} UTC"
    text = f"process {os.getpid()} ({words or 'python'}, writing since {since})"
    with suppress(OSError):
        _holder_file(path).write_text(text)


def holder_of(path: Path | str) -> str | None:
    """What the last process to write the database said of itself (see `_note_holder`)."""
    try:
        return _holder_file(path).read_text()[:200] or None
    except OSError:
        return None


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


def apply_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """(Re)create every view of sql/views/, dependencies first whatever the file order."""
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
    import polars as pl

    view = f"_placeflow_frame_{secrets.token_hex(4)}"
    # Arrow's string views are polars' own layout: DuckDB reads the frame without a copy.
    con.register(view, frame.to_arrow(compat_level=pl.CompatLevel.newest()))
    try:
        con.execute(f'insert into "{table}" by name select * from {view}')  # noqa: S608 - checked names
    finally:
        con.unregister(view)
    return frame.height
