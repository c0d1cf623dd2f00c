"""A sandbox's state kept in a folder, so that a sandbox started again carries on where the last
one stopped: its keys' credits and ledger, the rows billed, idempotency records, jobs (with their
places, so their result files render again) and what it counted.

    FOLDER/state.json        the snapshot: everything but the ledger's lines and the jobs' places
    FOLDER/ledger.jsonl      append-only: per commit and key, the new ledger entries and rows billed
    FOLDER/jobs/ID.json.gz   one job's places and row identities, written once at its submission
    FOLDER/lock              held (flock) by the one process whose sandbox keeps this folder

`commit` is called once a request is answered and before its reply goes out (`server._dispatch`):
new job files first, then the ledger's new lines, then the snapshot, replaced in one rename. The
snapshot is the commit point: it records how many bytes of the ledger it covers, and a sandbox
started again reads that many and cuts off the rest (lines of a commit whose snapshot never
landed, a process killed between the two). A reply the client saw is therefore always kept.

Keys are recorded by a digest, never in clear, and restored only for the keys the new sandbox is
configured with. What is not kept: rate-limit windows (a new process starts with empty ones), the
research book's counts, faults scripted with `inject`, and result files rendered ahead.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from placeflow.emulator.core import IdempotencyRecord, KeyState
from placeflow.emulator.jobs import Job
from placeflow.emulator.ledger import LedgerEntry

if TYPE_CHECKING:
    from placeflow.emulator.backend import SandboxBackend

VERSION = 1
ENDED_KEPT_SECONDS = 30 * 86_400.0
"""Jobs that ended longer ago than this (and their idempotency records) are not taken up: a
warehouse used for months does not make every request rewrite a snapshot of all its jobs. A
resume later than that finds the job unknown, as after a real service's retention."""
_JOB_FIELDS = (
    "kind", "content_hash", "created_at", "fate", "status", "started_at", "completed_at",
    "processed", "held", "settled", "error", "error_code", "total_items", "refuse_file",
    "forgotten", "downloads", "status_reads", "reads_ended",
)  # fmt: skip
_ACCOUNT_FIELDS = ("quota", "charged", "held", "released", "held_total")


def key_digest(key: str) -> str:
    """How the state names a key: a digest, never the key in clear."""
    return hashlib.sha256(f"placeflow-sandbox-key:{key}".encode()).hexdigest()[:32]


class SandboxStore:
    """The folder a sandbox keeps its state in (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.jobs_dir = folder / "jobs"
        self._lock: IO[bytes] | None = None
        self._generation = 0
        self._ledger_size = 0
        self._saved_entries: dict[str, int] = {}

    def acquire(self) -> bool:
        """Take the folder for this process; False when another live process holds it."""
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        handle = (self.folder / "lock").open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._lock = handle
        return True

    def release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # --- loading --------------------------------------------------------------------------

    def restore(self, backend: SandboxBackend) -> bool:
        """Put the kept state into a freshly reset `backend` and keep it from now on; False
        when there was none to put."""
        backend.keep_job = self.keep_job
        self._generation = backend.generation
        for state in backend.keys.values():
            state.account.rows_log = []
        path = self.folder / "state.json"
        if not path.exists():
            return False
        snap = json.loads(path.read_text())
        if snap.get("version") != VERSION:
            return False
        by_digest = {key_digest(k): s for k, s in backend.keys.items()}
        self._ledger_size = int(snap["ledger_bytes"])
        entries, billed = self._ledger(self._ledger_size)
        since = backend.clock.now() - ENDED_KEPT_SECONDS
        for job_id, fields in snap["jobs"].items():
            owner = by_digest.get(fields["key"])
            ended = fields["completed_at"] is not None and fields["completed_at"] < since
            if ended:
                (self.jobs_dir / f"{job_id}.json.gz").unlink(missing_ok=True)
            if owner is None or ended:
                continue
            job = Job(
                batch_id=job_id, key=owner.spec.key, kind=fields["kind"], pois=[],
                content_hash=fields["content_hash"], created_at=fields["created_at"],
            )  # fmt: skip
            for name in _JOB_FIELDS:
                setattr(job, name, fields[name])
            job.places_file = self.jobs_dir / f"{job_id}.json.gz"
            backend.jobs[job_id] = job
        for digest, kept in snap["keys"].items():
            found = by_digest.get(digest)
            if found is not None:
                _restore_key(found, kept, entries.get(digest, []),
                             billed.get(digest, Counter()), backend.jobs)  # fmt: skip
                found.scheduler.jobs = [backend.jobs[j] for j in kept["jobs"] if j in backend.jobs]
                self._saved_entries[digest] = len(found.account.entries)
        backend.request_counts = {r: Counter(c) for r, c in snap["requests"].items()}
        backend.downloads = Counter(snap["downloads"])
        backend.duplicate_submissions = int(snap["duplicate_submissions"])
        backend.replays = int(snap["replays"])
        return True

    def _ledger(self, size: int) -> tuple[dict[str, list[LedgerEntry]], dict[str, Counter[str]]]:
        """The ledger's first `size` bytes (what the snapshot covers), the rest cut off."""
        path = self.folder / "ledger.jsonl"
        entries: dict[str, list[LedgerEntry]] = {}
        billed: dict[str, Counter[str]] = {}
        if not path.exists():
            path.touch()
        with path.open("r+b") as f:
            data = f.read(size)
            f.truncate(size)
        for line in data.splitlines():
            record = json.loads(line)
            digest = record["key"]
            entries.setdefault(digest, []).extend(LedgerEntry(*e) for e in record["entries"])
            billed.setdefault(digest, Counter()).update(record["rows"])
        return entries, billed

    # --- keeping --------------------------------------------------------------------------

    def keep_job(self, job: Job) -> None:
        """A new job's places and row identities, written once (before its snapshot)."""
        path = self.jobs_dir / f"{job.batch_id}.json.gz"
        body = json.dumps({"pois": job.pois, "row_ids": job.row_ids}, separators=(",", ":"))
        path.write_bytes(gzip.compress(body.encode(), compresslevel=1, mtime=0))
        job.places_file = path

    def commit(self, backend: SandboxBackend) -> None:
        """Keep what the last request changed (under the backend's lock): the ledger's new
        lines, then the snapshot that covers them."""
        with backend.lock:
            if backend.generation != self._generation:  # reset: the kept state starts again
                self._generation, self._ledger_size, self._saved_entries = backend.generation, 0, {}
                (self.folder / "ledger.jsonl").write_bytes(b"")
            lines = []
            for state in backend.keys.values():
                digest = key_digest(state.spec.key)
                account = state.account
                start = self._saved_entries.get(digest, 0)
                new = [[e.at, e.kind, e.credits, e.ref] for e in account.entries[start:]]
                rows = account.rows_log or []
                if new or rows:
                    record = {"key": digest, "entries": new, "rows": rows}
                    lines.append(json.dumps(record, separators=(",", ":")) + "\n")
                self._saved_entries[digest] = len(account.entries)
                account.rows_log = []
            if lines:
                with (self.folder / "ledger.jsonl").open("ab") as f:
                    f.write("".join(lines).encode())
                    self._ledger_size = f.tell()
            snap = _snapshot(backend, self._ledger_size)
            tmp = self.folder / "state.json.tmp"
            tmp.write_text(json.dumps(snap, separators=(",", ":")))
            os.replace(tmp, self.folder / "state.json")


def _restore_key(
    state: KeyState,
    kept: dict[str, Any],
    entries: list[LedgerEntry],
    billed: Counter[str],
    jobs: dict[str, Job],
) -> None:
    account = state.account
    for name in _ACCOUNT_FIELDS:
        setattr(account, name, int(kept["account"][name]))
    account.entries = entries
    account.rows_billed = billed
    account.rows_log = []
    state.created_at = float(kept["created_at"])
    state.idempotency = {
        k: IdempotencyRecord(*v) for k, v in kept["idempotency"].items() if v[1] in jobs
    }
    state.submitted = Counter(kept["submitted"])
    state.scheduler.freed_at = float(kept["freed_at"])


def _snapshot(backend: SandboxBackend, ledger_bytes: int) -> dict[str, Any]:
    digest: Callable[[str], str] = key_digest
    return {
        "version": VERSION,
        "ledger_bytes": ledger_bytes,
        "keys": {
            digest(key): {
                "account": {n: getattr(s.account, n) for n in _ACCOUNT_FIELDS},
                "created_at": s.created_at,
                "idempotency": {
                    k: [r.body_hash, r.batch_id, r.response, r.created_at]
                    for k, r in s.idempotency.items()
                },
                "submitted": dict(s.submitted),
                "freed_at": s.scheduler.freed_at,
                "jobs": [j.batch_id for j in s.scheduler.jobs],
            }
            for key, s in backend.keys.items()
        },
        "jobs": {
            job_id: {"key": digest(job.key), **{n: getattr(job, n) for n in _JOB_FIELDS}}
            for job_id, job in backend.jobs.items()
        },
        "requests": {route: dict(c) for route, c in backend.request_counts.items()},
        "downloads": dict(backend.downloads),
        "duplicate_submissions": backend.duplicate_submissions,
        "replays": backend.replays,
    }
