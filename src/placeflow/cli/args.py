"""What every command's argument wiring shares, written once: --db, --json, --nl, --quiet, the
one error exit (`fail`: one JSON document under --json, the reason on stderr) and the output
that pipes (a reader that closes the pipe early, as `head` does, ends the command quietly).

The error document is one shape for every command, on stdout under --json:
`{"exit_code", "status", "error", "message"}` (`message` the same text as `error`, as
docs/cli.md promised it), with a run's figures and the command that finishes it when the error
stopped a recorded run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from placeflow.config import DEFAULT_DB, warehouse_path
from placeflow.errors import EXIT_FAILED, EXIT_OK, PlaceflowError, exit_code
from placeflow.support.text import printable

QUIET_HELP = "quiet: no live progress display, no notices or warnings on stderr (errors are said)"
DB_HELP = (
    "DuckDB warehouse (default: PLACEFLOW_DB, else `db` of placeflow.toml or pyproject's"
    f" [tool.placeflow], else {DEFAULT_DB})"
)


def add_db(p: Any) -> None:
    """`--db PATH`, the DuckDB warehouse (a parser or an argument group); resolved after
    parsing by `resolve_db` (flag > PLACEFLOW_DB > the configuration file > the default)."""
    p.add_argument("--db", default=None, help=DB_HELP)


def resolve_db(args: argparse.Namespace) -> None:
    """`args.db` as the command uses it: the flag, else PLACEFLOW_DB, else the configuration
    file's `db`, else DEFAULT_DB (`placeflow.config.warehouse_path`); then `NotAWarehouse`
    (exit 2) when it names a directory or a file that is not a DuckDB database, said before
    the command reads or spends anything."""
    if "db" not in vars(args):
        return
    args.db = warehouse_path(args.db)
    from placeflow.store.dbfile import check_warehouse

    check_warehouse(args.db)


def add_json(p: Any, help: str = "print one machine-readable summary") -> None:
    """`--json`, with what the command then prints."""
    p.add_argument("--json", action="store_true", help=help)


def add_nl(p: Any) -> None:
    """`--nl`: a JSON list printed as NDJSON, one object a line (implies --json)."""
    p.add_argument(
        "--nl", action="store_true", help="print the JSON list as NDJSON: one object a line"
    )


def add_quiet(p: Any) -> None:
    """`-q/--quiet`: no live progress display, notices or warnings; errors are still said."""
    p.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


def quiet(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "quiet", False))


def say(args: argparse.Namespace, text: str, *, err: bool = False) -> None:
    """A line for a person (a notice, a confirmation): printed unless --quiet."""
    if not quiet(args):
        print(printable(text), file=sys.stderr if err else sys.stdout)


def result(doc: dict[str, Any], *, code: int = EXIT_OK, status: str = "ok") -> dict[str, Any]:
    """A command's JSON result document: `doc` with its `exit_code` and `status` (kept when
    the document names its own status, as a run's summary does)."""
    return {**doc, "exit_code": doc.get("exit_code", code), "status": doc.get("status", status)}


def print_json(doc: Any) -> None:
    """One JSON document on stdout (dates and the like as text)."""
    print(json.dumps(doc, sort_keys=True, default=str))


def print_list(items: Iterable[dict[str, Any]], *, nl: bool) -> None:
    """A JSON list: one document, or with `nl` one object a line (NDJSON)."""
    if nl:
        for item in items:
            sys.stdout.write(json.dumps(item, sort_keys=True, default=str) + "\n")
    else:
        print(json.dumps(list(items), sort_keys=True, default=str))


def error_document(
    problem: str | BaseException, code: int, *, db: str | None = None
) -> dict[str, Any]:
    """The one `--json` document of a command that ended with an error: `exit_code`, `status`
    ("error", or the stopped run's own), `error` and `message` (the same text); for an error
    that stopped a recorded run, its figures, its `run_id` and `next`, the command that
    finishes it."""
    message = str(problem)
    doc: dict[str, Any] = {}
    run_id = getattr(problem, "run_id", None)
    if run_id:
        summary = getattr(problem, "summary", None)
        as_dict = getattr(summary, "as_dict", None)
        doc.update(as_dict() if callable(as_dict) else {}, run_id=run_id)
        doc["next"] = f"placeflow resume {run_id}" + (f" --db {db}" if db else "")
    doc.update(exit_code=code, error=message, message=message)
    doc.setdefault("status", "error")
    return doc


def fail(
    problem: str | BaseException,
    *,
    as_json: bool,
    code: int | None = None,
    db: str | None = None,
    prog: str = "placeflow",
) -> int:
    """The one error exit of every command: under --json the error document
    (`error_document`) on stdout and nothing on stderr (a script reads one document), else
    `prog: message` on stderr; returns the exit code (`code`, else the error's class's in
    `placeflow.errors.EXIT_CODES`)."""
    if code is None:
        found = exit_code(problem) if isinstance(problem, BaseException) else None
        code = EXIT_FAILED if found is None else found
    if as_json:
        print_json(error_document(problem, code, db=db))
    else:
        print(printable(f"{prog}: {problem}"), file=sys.stderr)  # it may quote a server
    return code


def run_command(args: argparse.Namespace, handler: Callable[[argparse.Namespace], int]) -> int:
    """`handler(args)` with the shared ends: the warehouse resolved, an error of placeflow's
    said once (`fail`), and a closed pipe ending the command quietly."""
    with closed_pipe_quiet():
        try:
            resolve_db(args)
            code = int(handler(args))
        except PlaceflowError as exc:  # codes by class: placeflow.errors.EXIT_CODES
            as_json = bool(getattr(args, "json", False) or getattr(args, "nl", False))
            code = fail(exc, as_json=as_json, db=getattr(args, "db", None))
        sys.stdout.flush()  # a closed pipe is met here, not at the interpreter's exit
        return code
    return EXIT_OK  # the reader closed the pipe: what it wanted was printed


@contextmanager
def closed_pipe_quiet() -> Iterator[None]:
    """A reader that closed stdout early (`| head -n 1`) ends the command without a
    traceback: the rest of the output goes nowhere, as it would for `cat`."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush finds no pipe


def one_command(add_parser: Callable[[Any], object], argv: Sequence[str] | None = None) -> int:
    """`python -m placeflow.cli.X COMMAND ...`: a parser of that one sub-command (added by
    `add_parser`), dispatched by its `func` as `placeflow COMMAND ...` is; the exit code."""
    parser = argparse.ArgumentParser(prog="placeflow")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run_command(args, args.func)
