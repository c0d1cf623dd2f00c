"""Every error placeflow raises, as one tree under `PlaceflowError`.

    PlaceflowError                      root: catch this to catch everything from placeflow
    ├── UsageError                      the caller's arguments or input (CLI exit code 2)
    │   ├── InputError                  a file cannot be read as places (names it, says what to do)
    │   ├── SourceProblem               why a source cannot be read (its reader adds which file)
    │   ├── FieldSpecError              a research attribute spec breaks the spec's limits
    │   │                               (placeflow.pipeline.research.fields; also a ValueError)
    │   ├── OptionsError                options or arguments out of bounds: a run's options, a
    │   │   │                           client's, poller's or limiter's settings, a function's
    │   │   │                           arguments (also a ValueError)
    │   │   └── PasswordInUrl           a destination URL carries a password: refused before
    │   │                               anything is sent (it would be shown and stored)
    │   ├── ConfigError                 the environment does not fit: its settings, or a state
    │   │                               directory others can write (also a ValueError)
    │   ├── UnknownRun                  no such run in this warehouse (also a LookupError)
    │   ├── UnknownReference            a row reference (FILE:ROW, id:VALUE, a key) no row of
    │   │                               the warehouse answers (placeflow.pipeline.notamatch)
    │   ├── NoWarehouse                 no warehouse where a reader looked: a run creates it
    │   │                               (also a FileNotFoundError)
    │   ├── NotAWarehouse               the warehouse path names a directory or a file that is not
    │   │                               a DuckDB database (a CSV, Parquet, JSON, ...): refused
    │   │                               before anything is read or spent (store.warehouse)
    │   ├── NotYetKnown                 asked for what is known only later: a read's info before
    │   │                               its batches are exhausted (also a RuntimeError)
    │   └── SecretRefused               a redact.Secret asked to leave in a pickle (also a
    │                                   TypeError)
    ├── RunInProgress                   another live process carries the run out: nothing done
    ├── FailedResult                    a flow run's result when its command did not end well:
    │                                   the summary as a read-only mapping (Prefect's Failed
    │                                   state carries it and resolves it into this exception)
    ├── RunStopped                      a run ended without completing; `summary` says where it is
    │   ├── BudgetRefused               over --max-credits or the key's balance: nothing spent (3)
    │   └── CreditsRanOut               402 part way: resumable once credits are added (3)
    ├── WarehouseError                  the DuckDB warehouse (exit code 1)
    │   ├── WarehouseBusy               another process holds the database (store.warehouse)
    │   ├── MigrationError              the database and sql/schema/ disagree (store.warehouse)
    │   ├── LoadError                   a result file does not match its chunk (pipeline.load)
    │   └── IllegalMove                 a chunk, research request or run moved where its
    │                                   lifecycle (placeflow.state.lifecycle) does not allow:
    │                                   refused, nothing written
    ├── RequestRejected                 refused before sending: a row breaks the spec's limits
    ├── RateCardError                   the rate card cannot price research: refused, nothing
    │                                   spent (3; also a ValueError)
    ├── Stop                            a research run stops before sending more (exit 1;
    │   │                               pipeline.research.send)
    │   └── StopRefused                 by a budget, the credits or the policy (3)
    ├── ExportError                     an export could not complete (placeflow.exporters.export)
    ├── TransientError                  may succeed if retried (placeflow.api.errors: 429, 503, 5xx,
    │                                   connection lost, timed out); retry only these
    ├── ApiError                        terminal answers of the service (placeflow.api.errors:
    │                                   400, 401, 402 InsufficientCredits, 403, 404, 409, 422,
    │                                   unexpected, outcome unknown, job failed, job timed out)
    │   └── UnexpectedResponse
    │       └── AnswerMismatch          a research answer's rows are not the places sent
    │                                   (placeflow.pipeline.research.load; also a ValueError)
    ├── DownloadError                   a result file could not be fetched and verified
    └── UnsafeRedirect                  a result-file host redirected where a download must not
                                        go (placeflow.api.transport)

The API branches are drawn in full in `placeflow.api.errors`. Transient errors are retried (by
the client, then by a Prefect task); everything else is terminal and raised at once. The CLI
maps these classes to exit codes in one table, `EXIT_CODES` at the end of this module: every
command (run, resume, refresh, research, export, report, ...) takes its codes from here.

The sandbox's own errors (`placeflow.emulator`: `ServiceError`, its ledger's
`InsufficientCredits`) are not placeflow's: they become the HTTP error replies that the client
raises as the classes above. tests/test_errors_tree.py checks that every public exception class
of the package derives from `PlaceflowError` and is drawn here or in `placeflow.api.errors`,
and that no module outside the sandbox raises a built-in exception class (ValueError, ...): a
class of this tree stands for it, the built-in as a second base where callers catch that.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


class PlaceflowError(Exception):
    """Root of every error placeflow raises."""


# --- usage ------------------------------------------------------------------------------------


class UsageError(PlaceflowError):
    """The caller asked for something placeflow cannot do: bad arguments, options or input."""


class InputError(UsageError):
    """A file that cannot be read as places at all: the message names it and what to do."""


class SourceProblem(UsageError):
    """A file cannot be read as places: the message says why and what to do (not which file)."""


class OptionsError(UsageError, ValueError):
    """Options or arguments out of bounds: a run's options, a client's, poller's or limiter's
    settings, a function's arguments. The message names the option and its limits."""


class PasswordInUrl(OptionsError):
    """A destination URL (`placeflow export --to`, a flow's `export_to`) carries a password:
    refused before anything is exported, since a URL is printed, logged and, as a flow
    parameter, stored by Prefect. The message says where the password goes instead."""


class ConfigError(UsageError, ValueError):
    """The environment does not fit: its settings (a key without a base URL, ...), or a state
    directory it gives that someone else could write."""


class UnknownRun(UsageError, LookupError):
    """No run with this id in the warehouse."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownReference(UsageError):
    """A reference to a row (FILE:ROW, id:VALUE or a key) that no row of the warehouse answers."""


class NoWarehouse(UsageError, FileNotFoundError):
    """No warehouse at the path given to read one (`connect(..., read_only=True)`): a run
    creates it."""


class NotAWarehouse(UsageError):
    """The warehouse path (`--db`) names a directory, or a file that is not a DuckDB database:
    DuckDB 2.0 would open a CSV, Parquet or JSON file as a throwaway in-memory database, and a
    run would pay for work it cannot keep. Refused before anything is read or spent."""


class NotYetKnown(UsageError, RuntimeError):
    """Asked for something known only later (a read's info before its batches are exhausted)."""


class SecretRefused(UsageError, TypeError):
    """A `placeflow.support.redact.Secret` asked to leave as its value (pickled): refused."""


# --- runs that stopped ------------------------------------------------------------------------


class Stop(PlaceflowError):
    """A research run stops before sending more: `kind` is unavailable or failed (the run left
    interrupted, as a run with chunks held: exit 1), or budget, credits or policy
    (`StopRefused`: nothing more would be spent). Made by `stop(kind, message)`; a research
    ends with it as a run does, through the run's own error (`ended`) and so `EXIT_CODES`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[Any, ...]:  # kept in the send stage's info, which a flow pickles
        return (type(self), (self.kind, str(self)))

    @property
    def status(self) -> str:
        """The run's status once stopped: refused (a policy said no, nothing sent), else
        interrupted (the same command goes on)."""
        return "refused" if self.kind == "policy" else "interrupted"

    def ended(self, run_id: str, summary: object) -> RunStopped | None:
        """The run's error the research ends with after its account, as a run ends (None: it
        returns its summary, interrupted)."""
        del run_id, summary
        return None


class StopRefused(Stop):
    """A research run stopped by a budget, the credits or the service's policy: it ends as a
    run refused (`BudgetRefused`, the policy) or whose credits ran out (`CreditsRanOut`)."""

    def ended(self, run_id: str, summary: object) -> RunStopped:
        stopped = BudgetRefused if self.kind == "policy" else CreditsRanOut
        return stopped(str(self), run_id=run_id, summary=summary)


def stop(kind: str, message: str) -> Stop:
    """The `Stop` of `kind`: refused for budget, credits and policy, else a plain stop."""
    return (StopRefused if kind in ("budget", "credits", "policy") else Stop)(kind, message)


class ExportError(PlaceflowError):
    """An export could not be completed; the destination is left as the last clean export."""


class RunInProgress(PlaceflowError):
    """Another process, still alive, carries the run out: a second one would race its chunks,
    so nothing was done (`placeflow runs` shows it; wait for it to finish)."""

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class FailedResult(PlaceflowError, Mapping[str, Any]):
    """A flow run's result when its command did not end well (`placeflow.flows`): the
    summary dict, readable as a mapping (`result["exit_code"]`, `dict(result)`), and the
    message as the exception's text. A Prefect Failed state carries it as its data: Prefect
    resolves a failed state's data into an exception, and a dict would make it raise
    `TypeError: Unexpected result for failed state` with the summary in every worker log."""

    def __init__(self, message: str, result: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.result = dict(result)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:  # a flow run's result is pickled
        return (type(self), (self.message, self.result))

    def __getitem__(self, key: str) -> Any:
        return self.result[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.result)

    def __len__(self) -> int:
        return len(self.result)

    __hash__ = PlaceflowError.__hash__  # an exception is hashed by identity, as every other


class RunStopped(PlaceflowError):
    """A run ended without completing; `summary` is its state as the warehouse records it (a
    `placeflow.pipeline.account.RunSummary`: typed `object` here, a base module, so that this
    tree imports nothing above it)."""

    def __init__(self, message: str, *, run_id: str, summary: object | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.summary = summary


class BudgetRefused(RunStopped):
    """The run would cost more than the caller allows or the key has: nothing was spent."""


class CreditsRanOut(RunStopped):
    """The service answered 402 part way: chunks already submitted are kept; resume later."""


class RateCardError(PlaceflowError, ValueError):
    """The rate card does not price deep research, or disagrees with the service's estimate
    (`placeflow.pipeline.research`): refused, nothing spent."""


# --- warehouse --------------------------------------------------------------------------------


class WarehouseError(PlaceflowError):
    """The DuckDB warehouse could not be opened, migrated or written as planned."""


class WarehouseBusy(WarehouseError):
    """Another process holds the database: DuckDB allows one writer at a time."""

    def __init__(self, path: Path, *, holder: str, detail: str) -> None:
        super().__init__(
            f"the warehouse {path} is in use by {holder} (DuckDB lets one process open a"
            " database at a time). Wait for that run to finish, or stop it, then try again;"
            " or point this command at another database file"
        )
        self.path = path
        self.detail = detail


class MigrationError(WarehouseError):
    """The database and the migrations in sql/schema/ do not fit together."""


class LoadError(WarehouseError):
    """The file does not match its chunk (line count, ids out of order) or cannot be read:
    nothing was written."""

    def __init__(self, message: str, *, run_id: str, chunk_no: int, path: Path) -> None:
        super().__init__(f"run {run_id} chunk {chunk_no}: {message} ({path}); nothing was loaded")
        self.run_id = run_id
        self.chunk_no = chunk_no
        self.path = path


class IllegalMove(WarehouseError):
    """A chunk, research request or run moved where its lifecycle (`placeflow.state.lifecycle`)
    does not allow: refused in the statement that would have made it, nothing written."""


# --- exit codes -------------------------------------------------------------------------------

EXIT_OK = 0
"""Done."""
EXIT_FAILED = 1
"""The run stopped or some chunks failed: see the message; `placeflow resume` where it says."""
EXIT_USAGE = 2
"""Bad arguments or input files that cannot be read as places."""
EXIT_REFUSED = 3
"""Refused before spending (budget, credits, the rate card), or stopped when credits ran out."""
EXIT_LEFT_TO_OTHER_RUN = 4
"""Places left to another run (its claims) still have no answer: that run must end first, or
be resumed when it is dead; this one bought none of them."""
EXIT_DOUBLE_CHARGED = 5
"""The service billed work twice (a lost answer re-sent after its record of the first was
gone): booked in the ledger, named in one line."""
EXIT_ALL_REJECTED = 6
"""Every input row was rejected: nothing to send (the rejects say why)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (SIGINT): state saved, `placeflow resume RUN_ID` finishes the run."""


EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (BudgetRefused, EXIT_REFUSED),
    (CreditsRanOut, EXIT_REFUSED),
    (RateCardError, EXIT_REFUSED),
    (StopRefused, EXIT_REFUSED),
    (UsageError, EXIT_USAGE),
    (PlaceflowError, EXIT_FAILED),
)
"""The one table of exit codes by exception class, first match wins (the README's table).
Anything else is a bug: it propagates with its traceback."""


def exit_code(exc: BaseException) -> int | None:
    """The exit code of an error placeflow raises; None for an error that is not ours."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return None
