"""Ctrl-C during `placeflow run`/`resume`: stop at once, say what was saved and how to finish.

The warehouse is written ahead (a chunk's row before its POST, its batch_id right after), so a
run stopped at any instant resumes without paying twice: stopping is the crash the run already
survives. On SIGINT the CLI therefore marks the run `interrupted` (when the warehouse lets it
within a moment), prints one line (or one JSON document) with the exact `placeflow resume`
command, stops Prefect's temporary server and leaves with EXIT_INTERRUPTED, without unwinding
the flow (no Prefect crash report, no traceback, no objects left to leak).

Jobs the run submitted keep running (their finished work is billed anyway, and resume loads
it) unless the user asks otherwise: `--cancel-on-interrupt`, or a second Ctrl-C while the first
is handled. When jobs are running, the first Ctrl-C's line says so and the CLI waits
`SECOND_WAIT` seconds for that second Ctrl-C before it leaves. A cancelled job's unprocessed
places are not answered by a resume (it loads what the job processed and completes the run):
the line then also names the command that sends them, the run's own command again (a new run,
once the resume has completed this one). A cancel asked for that fails, or does not answer
within `CANCEL_WAIT`, is said in the line too: the jobs may still be running, and how to go on.

The live display is cleared (`before_saying`) before anything is printed: it would redraw over
the line. The handler runs in the main thread between any two of its steps, so it acts once
that thread is out of the display's own writes (`at_rest`): a frame left half written keeps
the clear from reaching the terminal, and a stream's write cannot be entered again.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from placeflow.errors import EXIT_INTERRUPTED
from placeflow.state.marking import Marked, mark_run
from placeflow.support.text import printable

MARK_WAIT = 3.0
"""Seconds to wait for the warehouse to take the `interrupted` mark before leaving without it."""
CANCEL_WAIT = 3.0
"""Seconds to wait for the service to take the cancel of the running jobs, when asked for."""
SECOND_WAIT = 4.0
"""Seconds the first Ctrl-C waits for a second one (which also cancels the running jobs)."""


class Interrupt:
    """A SIGINT handler for one CLI run: installed by `arm`, acts on the first Ctrl-C."""

    def __init__(
        self,
        *,
        db: str,
        as_json: bool,
        cancel_jobs: bool,
        run_id: str | None = None,
        command: str | None = None,
    ) -> None:
        self.db = db
        self.as_json = as_json
        self.cancel_jobs = cancel_jobs
        self.run_id = run_id
        self.command = command
        """The `placeflow run ...` command being run (None for a resume)."""
        self.since = datetime.now(UTC)
        self.before_saying: Callable[[], None] | None = None
        """Called first on Ctrl-C: the live display's `clear`."""
        self.before_leaving: Callable[[], None] | None = None
        """Called last, before the exit: the live display's `release` of the terminal."""
        self.at_rest: Callable[[Callable[[], None]], None] | None = None
        """Given what the Ctrl-C does, calls it once the main thread is out of the live
        display's writes (`ProgressDisplay.at_rest`); without it, at once."""
        self._previous: Any = None
        self._second = threading.Event()

    def arm(self) -> None:
        self._previous = signal.signal(signal.SIGINT, self._handle)

    def disarm(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _again(self, signum: int, frame: FrameType | None) -> None:
        """The second Ctrl-C: cancel the submitted jobs too; any further one is ignored."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self._second.set()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, self._again)  # runs nested while this one works
        if self.at_rest is None:
            self._act()
        else:  # not from inside a frame of the display the main thread was drawing
            self.at_rest(self._act)

    def _act(self) -> None:
        """What the first Ctrl-C does: the display cleared, the run marked, its line said,
        the process left with EXIT_INTERRUPTED, whatever fails on the way."""
        try:
            self._call(self.before_saying)
            outcome = self.stop()
            hinted = outcome.pop("_hinted", False)  # its line is printed: only news follows
            if self.as_json:  # the error document's shape: `error` beside `message`
                document = {**outcome, "error": outcome["message"]}
                _said(json.dumps(document, sort_keys=True), sys.stdout)
            elif not hinted or outcome.get("cancelled"):
                _said(printable(str(outcome["message"])), sys.stderr)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with suppress(OSError, RuntimeError, ValueError):  # closed, or its write stopped
                    stream.flush()
            self._call(self.before_leaving)
            _stop_prefect_server()
            os._exit(EXIT_INTERRUPTED)

    @staticmethod
    def _call(hook: Callable[[], None] | None) -> None:
        """A hook of the live display (`before_saying`, `before_leaving`), if any."""
        if hook is None:
            return
        try:
            hook()
        except Exception:  # a display that cannot stop cleanly must not stop the exit
            return

    def stop(self) -> dict[str, Any]:
        """Mark the run, cancel its jobs when asked; the outcome as the JSON document."""
        answered = _bounded(
            lambda: mark_run(self.db, run_id=self.run_id, since=self.since, message=_ctrl_c),
            MARK_WAIT,
        )
        found: Marked | None = None if _unanswered(answered) else answered
        if found is None and self.run_id is not None:
            found = Marked(self.run_id, "interrupted", marked=False)
        if found is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            said = (
                "interrupted before the run was recorded; nothing was saved"
                if answered is None
                else f"interrupted; the warehouse did not answer within {MARK_WAIT:g} s, so"
                " whether the run was recorded is not known here: `placeflow runs --db"
                f" {self.db}` lists it, and the same command resumes it"
            )
            return {
                "run_id": None, "status": "interrupted", "next": None, "db": self.db,
                "message": f"placeflow: {said}", "exit_code": EXIT_INTERRUPTED,
            }  # fmt: skip
        nxt = f"placeflow resume {found.run_id} --db {self.db}"
        saved = f"run {found.run_id} saved ({found.status}, {found.jobs_submitted} job(s) submitted"
        head = f"placeflow: interrupted; {saved}); finish it with: {nxt}"
        cancel, hinted = self.cancel_jobs or self._second.is_set(), False
        if not cancel and found.jobs_running:
            hinted = True
            _said(
                f"{head}; press Ctrl-C again within {SECOND_WAIT:g} s to also cancel the"
                f" {found.jobs_running} submitted job(s) still running",
                sys.stderr,
            )
            cancel = self._wait_second(SECOND_WAIT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        cancelled, asked = None, None
        if cancel and found.jobs_running:
            asked = _bounded(lambda: _cancel(self.db, found.run_id), CANCEL_WAIT)
            cancelled = None if _unanswered(asked) else asked
        message, then = head, None
        if cancel and found.jobs_running and cancelled is None:  # asked for, not done: say so
            message = f"placeflow: interrupted; {saved}); " + _not_cancelled(
                asked, found.jobs_running, nxt
            )
            hinted = False  # news after the hint of a second Ctrl-C: said too
        elif cancelled:  # a resume loads what they processed; the rest needs a new run
            then = self.command or "the command that started the run, again"
            message = (
                f"placeflow: interrupted; {saved}, {cancelled} cancelled); load what they"
                f" processed with: {nxt}; then send the places they left unanswered with: {then}"
            )
        elif cancelled is not None:
            message = f"placeflow: interrupted; {saved}, 0 cancelled); finish it with: {nxt}"
        return {
            **found.figures,
            "run_id": found.run_id,
            "status": found.status,
            "message": message,
            "next": nxt,
            "then": then,
            "db": self.db,
            "exit_code": EXIT_INTERRUPTED,
            "jobs_submitted": found.jobs_submitted,
            "jobs_done": found.jobs_done,
            "jobs_running": found.jobs_running,
            "cancelled": cancelled or 0,
            "_hinted": hinted,
        }

    def _wait_second(self, seconds: float) -> bool:
        """Wait up to `seconds` for the second Ctrl-C, in short slices: a signal delivered to
        another thread runs its handler here at the next slice."""
        deadline = time.monotonic() + seconds
        while not self._second.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._second.wait(min(left, 0.1))
        return self._second.is_set()


def _said(line: str, stream: Any) -> None:
    """`line` on `stream`, or straight on its descriptor when the stream cannot take it: the
    Ctrl-C came while the main thread was inside that stream's own write (a log line, a
    warning), which cannot be entered again ("reentrant call")."""
    try:
        print(line, file=stream, flush=True)
    except RuntimeError:
        try:
            os.write(stream.fileno(), (line + "\n").encode("utf-8", "replace"))
        except (OSError, ValueError, AttributeError):  # no descriptor: nowhere else to say it
            return


def _ctrl_c(run_id: str, db: str) -> str:
    return f"interrupted (Ctrl-C); `placeflow resume {run_id} --db {db}` finishes it"


UNANSWERED = object()
"""What `_bounded` returns when the work did not end within its wait."""


class Failed:
    """What `_bounded` returns when the work raised: the error, to be said."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _unanswered(outcome: Any) -> bool:
    """Whether `_bounded`'s work gave no answer: it hung past its wait or raised."""
    return outcome is UNANSWERED or isinstance(outcome, Failed)


def _not_cancelled(outcome: Any, running: int, nxt: str) -> str:
    """The line's news when the cancel the user asked for did not happen: why, that the jobs
    may still be running (billed for what they process), and what to do."""
    why = (
        f"cancelling its {running} running job(s) failed"
        f" ({printable(type(outcome.error).__name__)}: {printable(str(outcome.error))})"
        if isinstance(outcome, Failed)
        else f"cancelling its {running} running job(s) did not answer within {CANCEL_WAIT:g} s"
    )
    return (
        f"{why}, so they may still be running, billed for what they process; finish it with:"
        f" {nxt} (it loads what they processed), adding --cancel-on-interrupt and pressing"
        " Ctrl-C to try the cancel again"
    )


def _bounded(work: Callable[[], Any], wait: float | None = MARK_WAIT) -> Any:
    """`work()` in a thread, waited for up to `wait` seconds (None: until it ends); UNANSWERED
    if it hung, `Failed` if it raised."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(work())
        except Exception as exc:  # said by the caller, never raised: the process is leaving
            box.append(Failed(exc))

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(wait)
    return box[0] if box else UNANSWERED


def _cancel(db: str, run_id: str | None) -> int:
    """Ask the service to cancel the run's jobs still running; how many it was asked for."""
    import duckdb

    from placeflow.config import load_settings
    from placeflow.runner.target import open_target

    if run_id is None:
        return 0
    con = duckdb.connect(db)
    try:
        rows = con.execute(
            "select batch_id from jobs where run_id = ? and status = 'submitted'"
            " and batch_id is not null",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    settings = load_settings()
    if settings.uses_sandbox:  # the embedded sandbox stops with this process: no one to ask (its
        return 0  # kept jobs end on its clock when a resume starts it again, and load then)
    count = 0
    with (
        open_target(
            api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits
        ) as target,
        target.client(timeout=2.0) as api,
    ):
        for (batch_id,) in rows:
            api.cancel_job(str(batch_id))
            count += 1
    return count


def _stop_prefect_server() -> None:
    """Stop Prefect's temporary server, if this process started one (its atexit will not run)."""
    module = sys.modules.get("prefect.server.api.server")
    if module is None:
        return
    for server in list(getattr(module.SubprocessASGIServer, "_instances", {}).values()):
        _bounded(server.stop)
