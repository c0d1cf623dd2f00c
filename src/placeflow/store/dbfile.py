"""Whether a path can be the DuckDB warehouse (`--db`): a DuckDB database file, or a path that
does not exist yet. DuckDB 2.0 opens a CSV, Parquet or JSON file as a throwaway in-memory
database (its tables views of the file): a run pointed at one would pay for work it cannot
keep, fail, and pay again when run again. So the file's header is read first, before anything
else is read or spent, by every command taking `--db` and by `placeflow.store.warehouse.connect`.

The files beside it are made here too: a new warehouse placed whole (`create_aside`,
`copy_template`), and the note of which process writes it (`note_holder`, `holder_of`)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from time import monotonic, sleep

import duckdb

from placeflow.errors import NotAWarehouse, WarehouseBusy

DUCKDB_MAGIC = b"DUCK"
"""Bytes 8 to 11 of every DuckDB database file (its main header, after an 8-byte checksum)."""


def check_warehouse(path: Path | str) -> None:
    """`NotAWarehouse` unless `path` is a DuckDB database file or does not exist yet (a run
    creates it); `:memory:` passes."""
    if str(path) == ":memory:":
        return
    remote = _remote(str(path))
    if remote is not None:
        raise NotAWarehouse(
            f"{path} names {remote}, not a DuckDB file on this machine: placeflow writes its"
            " warehouse as a local DuckDB file (one writer at a time), and readers elsewhere"
            " read its exports (docs/operations.md, 'A team on several machines'). Name a"
            " local path, e.g. data/placeflow.duckdb"
        )
    target = Path(path)
    if target.is_dir():
        raise NotAWarehouse(
            f"{target} is a directory, not a DuckDB warehouse: name a database file, e.g."
            f" {target / 'placeflow.duckdb'}"
        )
    try:
        with target.open("rb") as handle:
            head = handle.read(16)
    except FileNotFoundError:
        return  # a new warehouse: a run creates it
    except OSError as exc:
        raise NotAWarehouse(
            f"{target} cannot be read to check it is a DuckDB warehouse ({exc.strerror or exc})"
        ) from None
    if head[8:12] != DUCKDB_MAGIC:
        raise NotAWarehouse(
            f"{target} is not a DuckDB warehouse ({_kind_of(head)}): DuckDB would open it as a"
            " throwaway database and lose what a run paid for. Name a warehouse a run made, or"
            " a path that does not exist yet"
        )


REMOTE = {"md": "a MotherDuck database", "motherduck": "a MotherDuck database"}
"""DuckDB's prefixes of databases that are not files here (``md:NAME``)."""


def _remote(path: str) -> str | None:
    """What `path` names when it is a database elsewhere (``md:...``, or any ``scheme://``
    URL), not a local file; None for a local path (a drive letter is no scheme)."""
    scheme, colon, rest = path.partition(":")
    if not colon or len(scheme) < 2 or not scheme.replace("+", "").isalnum():
        return None
    if scheme.lower() in REMOTE:
        return REMOTE[scheme.lower()]
    return f"a {scheme}:// location" if rest.startswith("//") else None


def create_aside(target: Path, build: Callable[[Path], None]) -> None:
    """Make a new warehouse at `target` whole: `build` makes it (migrated, its views applied,
    closed) at a temporary path beside it, which is then linked into place unless another
    process made one there meanwhile (that one is kept). Another process never meets it half
    made nor waits on its making: a reader finds no warehouse, then one with every table. Where
    the file system has no hard links, nothing is made here and the caller makes it in place."""
    aside = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(3)}.new")
    try:
        build(aside)
        try:
            os.link(aside, target)
        except FileExistsError:
            pass  # another process made it first: that one is the warehouse
        except OSError:
            return  # no hard links here: made in place by the caller
    finally:
        for made in (aside, Path(f"{aside}.wal")):
            made.unlink(missing_ok=True)


def _kind_of(head: bytes) -> str:
    """What a file's first bytes say it is, for the message."""
    if not head:
        return "an empty file"
    if head.startswith(b"PAR1"):
        return "a Parquet file"
    if head.startswith(b"SQLite format 3"):
        return "an SQLite database"
    if head.lstrip()[:1] in (b"{", b"["):
        return "JSON, it seems"
    return "a CSV or another kind of file, it seems"


class _Template:
    """A migrated empty warehouse, as bytes: made once per machine (and per version of sql/ and
    DuckDB) by `migrate` and `apply_views` themselves, kept in this user's private template
    folder (`template_folder`), read once per process; each new warehouse file is a copy of it
    (0.06-0.08 CPU s, not 0.4-0.7). `connect` then stamps the copy's history with the copy's
    time and runs `migrate` and `apply_views` as ever (no-ops unless sql/ changed since the
    template was made)."""

    lock = threading.Lock()
    tried = False
    image: bytes | None = None


def template_folder() -> Path | None:
    """This user's private folder of warehouse templates (made 0700 if need be), or None when
    it cannot be one (not this user's, or others may write it): then nothing is kept."""
    folder = Path(tempfile.gettempdir()) / f"placeflow-{os.getuid()}" / "templates"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for part in (folder.parent, folder):
            info = part.lstat()
            if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode) or info.st_mode & 0o022:
                return None
    except OSError:
        return None
    return folder


def kept(make: Callable[[], bytes | None], sources: list[Path], version: str) -> bytes | None:
    """The template `make` makes, kept in this user's template folder under a digest of its
    `sources` and `version`, so that any later process reads it instead of making it; placed
    whole (another process reads all of it or none). Made afresh when it cannot be kept."""
    folder = template_folder()
    digest = hashlib.sha256(version.encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    path = None if folder is None else folder / f"{digest.hexdigest()[:32]}.duckdb"
    if path is not None:
        with suppress(OSError):
            return path.read_bytes()
    image = make()
    if path is not None and image is not None:
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        with suppress(OSError):
            partial.write_bytes(image)
            os.replace(partial, path)
        with suppress(OSError):
            partial.unlink()
    return image


def copy_template(target: Path, make: Callable[[], bytes | None]) -> bool:
    """Place a copy of the process's template (made by `make` when first needed) at `target`
    when no database is there; whether it did. It appears whole or not at all (a hard link of
    a finished copy): a process opening the same new path meanwhile opens nothing or a
    migrated warehouse. On any failure (no template, no hard links, a read-only folder)
    nothing is placed and the caller migrates in place as before."""
    if target.exists() or Path(f"{target}.wal").exists():
        return False
    with _Template.lock:
        if not _Template.tried:  # made once: one that cannot be made is not tried again
            _Template.tried = True
            _Template.image = make()
        image = _Template.image
    if image is None:
        return False
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        partial.write_bytes(image)
        os.link(partial, target)
    except OSError:
        return False
    finally:
        with suppress(OSError):
            partial.unlink()
    return True


def _holder_file(path: Path | str) -> Path:
    return Path(f"{path}.holder")


def note_holder(path: Path | str) -> None:
    """Say beside the database which process writes it (DuckDB's lock error names only a pid):
    the command's first two words, its pid and when, so a reader turned away can say who.
    Best effort: a read-only directory just leaves the pid."""
    if str(path) == ":memory:":  # no file: nothing beside it
        return
    words = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv[:2]))
    since = f"{datetime.now(UTC):%H:%M:%S} UTC"
    text = f"process {os.getpid()} ({words or 'python'}, writing since {since})"
    with suppress(OSError):
        _holder_file(path).write_text(text)


def note_let_go(path: Path | str, *, closing: bool = False) -> None:
    """Say beside the database when this process let go of it (wall clock and pid), so that a
    writer of another process waiting for it leaves readers a gap first (`wait_for_gap`);
    `closing`: its close (a checkpoint) has begun and the file is free at its end. Best
    effort, as `note_holder`; the note is replaced whole, never seen half written."""
    if str(path) == ":memory:":
        return
    state = "closing" if closing else "free"
    note = Path(f"{path}.free")
    written = note.with_name(f".{note.name}.{os.getpid()}")
    with suppress(OSError):  # replaced whole: a writer of another process polls it meanwhile,
        written.write_text(f"{time.time():.6f} {os.getpid()} {state}")  # and read half
        os.replace(written, note)  # written, as no note, it took the gap readers were left


READERS_GAP = 0.3
"""Seconds a writer leaves the database free after another process's writer let go of it
(`placeflow.store.writer.GAP` is its own): longer than a reader trying every quarter of a
second takes between two tries."""
CLOSE_WAIT = 2.0
"""Seconds at most a writer waits for another process's close said begun to be said done."""


def _let_go_by_other(path: Path | str) -> tuple[float, bool] | None:
    """When another process last let go of the database, and whether its close is under way
    (None: never, or this process)."""
    try:
        at, pid, state = Path(f"{path}.free").read_text().split()
        return None if int(pid) == os.getpid() else (float(at), state == "closing")
    except (OSError, ValueError):
        return None


def wait_for_gap(path: Path | str, gap: float = READERS_GAP) -> float:
    """Sleep out what is left of `gap` since another process let go of the database, from the
    end of its close (waited for, CLOSE_WAIT s at most); nothing after this process's own
    let-go, whose gap its writer keeps itself. The time of its last look at the note."""
    while True:
        now = time.time()  # before the note is read: a let-go noted after it is later
        note = _let_go_by_other(path)
        if note is None:
            return now
        at, closing = note
        if closing and now < at + CLOSE_WAIT:
            time.sleep(0.02)  # its close is under way: the readers' gap starts at its end
            continue
        if at + gap <= now:
            return now
        time.sleep(min(at + gap - now, gap))  # then read again: it may have let go since


def gap_taken(path: Path | str, tried: float) -> bool:
    """Whether another process let go of the database since `tried` (an open begun then may
    have taken the file in the gap that let-go leaves readers)."""
    note = _let_go_by_other(path)
    return note is not None and note[0] > tried


def holder_of(path: Path | str) -> str | None:
    """What the last process to write the database said of itself (see `note_holder`)."""
    try:
        return _holder_file(path).read_text()[:200] or None
    except OSError:
        return None


NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre",
     "gpfs", "beegfs", "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.rclone",
     "fuse.glusterfs", "fuse.cephfs", "fuse.juicefs", "fuse.goofys"}
)  # fmt: skip
"""File systems a folder may be shared through between hosts (as /proc/mounts names them)."""


def network_filesystem(path: Path | str, mounts: Path = Path("/proc/mounts")) -> str | None:
    """The network file system holding `path`'s folder (``nfs4``, ``cifs``, ...), None when it
    is a local one or cannot be told (no /proc/mounts: not Linux). Two hosts writing one DuckDB
    file over such a share is not supported: its lock does not hold across hosts, and the file
    is corrupted (docs/operations.md, 'A team on several machines')."""
    if str(path) == ":memory:":
        return None
    try:
        where = Path(path).expanduser().resolve().parent
        table = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    best, kind = -1, None
    for line in table:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = where == Path(point) or Path(point) in where.parents
        if inside and len(point) > best:
            best, kind = len(point), fields[2]
    return kind if kind in NETWORK_FILESYSTEMS else None


def shared_note(path: Path | str) -> str | None:
    """What a run says when the warehouse lies on a network file system (None: it does not)."""
    kind = network_filesystem(path)
    if kind is None:
        return None
    return (
        f"the warehouse {path} is on a network file system ({kind}): only one host may write"
        " it (DuckDB's lock does not hold across hosts, and two writers corrupt the file). Run"
        " the workers that write it on one host; others submit runs and read the exports"
        " (docs/operations.md, 'A team on several machines')"
    )


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the database has the table (or view) `name`, which may name its schema: asked
    of that table alone (`duckdb_tables()` reads every table's metadata, 10-15 ms on a
    connection just opened)."""
    try:
        con.execute("select count(*) from pragma_table_info(?)", [name]).fetchall()
    except duckdb.CatalogException:
        return False
    return True


_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def busy(path: Path, detail: str) -> WarehouseBusy:
    """WarehouseBusy naming the holder: the process DuckDB names, as it said who it is."""
    found = _LOCK_PID.search(detail)
    holder = f"process {found.group(1)}" if found else "another process"
    said = holder_of(path)
    if said and (found is None or said.startswith(f"process {found.group(1)} ")):
        holder = said
    return WarehouseBusy(path, holder=holder, detail=detail)


class Backoff:
    """The tries of one open (or attach) of the warehouse while another process holds it:
    `refused` after each refused try sleeps a little longer each time (0.02 s, doubling to
    0.5 s: the holder writes for moments, then lets go), and raises `WarehouseBusy` naming the
    holder once `wait` seconds have passed."""

    def __init__(self, path: Path | str, wait: float) -> None:
        self.path = Path(path)
        self.deadline = monotonic() + wait
        self.pause = 0.02

    def refused(self, exc: duckdb.Error) -> None:
        if monotonic() + self.pause > self.deadline:
            raise busy(self.path, str(exc)) from exc
        sleep(self.pause)  # the real clock: a waiting open is not the notes' (`time` above)
        self.pause = min(self.pause * 2, 0.5)
