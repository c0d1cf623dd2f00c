"""A run's verified result files, loaded in batches (`placeflow.runner.carry`).

A chunk's file, fetched and its sha256 proved (`placeflow.pipeline.fetch`), waits in the batch
until it holds `BATCH_ROWS` rows, a step of the carry ends (`flush`), or the run's thread is
about to wait on the service (`before_wait`: a poll's pause, the sender's next job) for
`LONG_WAIT` seconds or more, or while a file has waited `BATCH_WAIT` seconds or `BATCH_FILES`
files wait; then the batch is loaded in one transaction (`placeflow.pipeline.load.load_all`).
Against a service that answers at once the run's thread mostly waits moments for the sender's
next job: loading then would load a chunk at a time. A batch refused as a whole is loaded again
one file at a time, so that a bad file is its chunk's failure alone. A file fetched and not yet
loaded when the run stops is recorded on its chunk: a resume loads it from disk.

While the run's writer holds the file in stretches (`placeflow.store.writer.Writer.stretch`:
its waits on the service are all short), a batch due by its files' wait or number is loaded at
the start of a stretch, not at its end: a load at the end would keep readers out for the
stretch and the load in one go. The step's last request ends the stretch (`left`): the step's
last load (of `BATCH_FILES` files or so), what follows it and the run's close come in a
stretch of their own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import DownloadError, NotFound, TransientError
from placeflow.errors import LoadError
from placeflow.events import Emit
from placeflow.pipeline.fetch import Fetched
from placeflow.pipeline.load import Kind, load, load_all
from placeflow.runner.steps import Stages
from placeflow.state.runstate import RunState
from placeflow.store.warehouse import in_transaction
from placeflow.store.writer import STRETCH

BATCH_ROWS = 122_880
"""Rows of result files from which a batch is loaded (in one transaction, the files that came
before it): a row group of DuckDB's. A transaction that inserts a full row group writes it to
the database file compressed, once, where smaller ones write their rows to the write-ahead log
and again at the checkpoint; and the load's statements are planned once for 13 chunks of 10,000
rows, not once a chunk (planning the load's statement costs as much as reading a chunk).
Readers are kept out for one such load, about a second."""
LONG_WAIT = 1.0
"""Seconds of a wait on the service (a poll's pause) before which the batch is loaded, however
small: the load costs the run no time then."""
BATCH_WAIT = 10.0
"""Seconds a verified file waits in the batch at most before a wait on the service, however
short, loads it: the warehouse shows a run's outcomes this soon after their files came."""
CHUNK_FAILURES = (DownloadError, LoadError, NotFound, TransientError)
"""What settling one chunk may raise that is that chunk's alone: noted on it, retried by a
resume, never stopping the others (NotFound: its job, asked for a fresh file URL, is unknown to
the service)."""

BATCH_FILES = 20
"""Files from which a batch is due at a wait (as at `BATCH_WAIT`). Each file is a scan of its
own in the load's statement, about 5 ms of CPU besides the load's 45: twenty load in 0.15 CPU
s, at no more CPU a file than a hundred and fifty, which a synchronous route against a service
answering at once gathers in ten seconds and loads in 1-3 s of a loaded machine's wall time,
all of it readers' time."""
FRESH = 0.25
"""Seconds of the writer's stretch within which a batch due by its files' wait is loaded at a
wait; past them it waits for the next stretch (the writer lets go within `STRETCH` seconds)."""

Failed = Callable[[int, Exception], None]
"""Told a chunk whose load failed (`CHUNK_FAILURES`), and why."""


class Batch:
    """Verified files waiting to be loaded, with their rows; only the run's thread (the one
    that made it) adds, loads, and loads before it waits."""

    def __init__(
        self,
        r: Stages,
        state: RunState,
        *,
        kind: Kind,
        emit: Emit,
        failed: Failed,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.r, self.state, self.kind, self.emit, self.failed = r, state, kind, emit, failed
        self.files: list[tuple[Fetched, int]] = []
        self._clock = clock
        self._since = 0.0
        """When the oldest file of the batch came (on `clock`)."""
        self._thread = threading.get_ident()
        self._opened = state.db.opened
        """The writer's opens when the batch was made (the run's carry began)."""

    def add(self, fetched: Fetched) -> None:
        """A chunk's verified file joins the batch; a full batch is loaded."""
        rows = fetched.lines
        if rows is None:
            rows = self.state.chunk(fetched.chunk_no).rows
        if not self.files:
            self._since = self._clock()
        self.files.append((fetched, rows))
        if sum(n for _, n in self.files) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        """Load the batch in one transaction; one refused as a whole, each file alone, so that
        a bad file fails its own chunk only."""
        files, self.files = [f for f, _ in self.files], []
        if len(files) > 1:
            self.r.started("load")
            try:
                infos = self.r.batch("load", load_all)(
                    self.state, files, kind=self.kind, emit=self.emit
                )
            except LoadError:
                pass  # which file, and why: each is loaded alone below
            else:
                self.r.stages.setdefault("load", []).extend(infos)
                return
        for fetched in files:
            try:
                self.r.each("load", load)(self.state, fetched, kind=self.kind, emit=self.emit)
            except CHUNK_FAILURES as exc:
                self.failed(fetched.chunk_no, exc)

    def left(self, requests: int) -> None:
        """`requests` are left to send in the step: the last one's wait ends the writer's
        stretch, however short (its readers' gap covered by the request), so that the step's
        last load, what follows it and the run's close come in a stretch of their own; unless
        the writer has not let go and opened again since the carry began (a step of moments,
        a run of a few places: its end is no longer for it, and costs no let-go)."""
        db = self.state.db
        if requests == 1 and db.stretch is not None and db.opened > self._opened:
            db.stretch = 0.0

    @contextmanager
    def stretched(self) -> Iterator[None]:
        """The block (the run's account) in the writer's stretch when the carry let go for
        readers before (as `left` judges it): its request to the service (the usage after) lets
        go of a hold that has lasted `STRETCH`, as a step's requests do; a run of moments keeps
        its hold to its end."""
        db = self.state.db
        if db.stretch is None and db.opened > self._opened:
            db.stretch = STRETCH
        try:
            yield
        finally:
            db.stretch = None

    def before_wait(self, seconds: float | None) -> None:
        """The calling thread is about to wait on the service for `seconds` (None: until the
        sender's next job comes): when it is the run's, the batch is loaded first if the wait
        is `LONG_WAIT` or longer, or its oldest file has waited `BATCH_WAIT` (or it holds
        `BATCH_FILES`) and the writer's stretch, if any, has just begun (`FRESH`)."""
        if not self.files or threading.get_ident() != self._thread:
            return
        db = self.state.db
        holding = db.holding()
        if holding and in_transaction(self.state.con):
            return  # a wait inside a transaction: the batch is loaded after it, not into it
        if seconds is not None and seconds >= LONG_WAIT:
            self.flush()
            return
        waited = self._clock() - self._since
        due = waited >= BATCH_WAIT or len(self.files) >= BATCH_FILES
        late = db.stretch is not None and holding and db.held_for() >= FRESH
        late = late and waited < 3 * BATCH_WAIT  # never put off for good (a slow machine)
        if due and not late:  # a stretch under way ends within STRETCH: loaded at the next
            self.flush()

    @contextmanager
    def waits(self, api: PlaceApiClient) -> Iterator[None]:
        """In the block, the client's waits on the service (`api.waiting`) load the batch first
        (`before_wait`)."""
        inner = api.waiting

        def waiting(seconds: float) -> None:
            self.before_wait(seconds)
            if inner is not None:
                inner(seconds)

        api.waiting = waiting
        try:
            yield
        finally:
            api.waiting = inner
