"""What several commands' argument wiring shares, written once: --db, --json, --quiet, and the
plain error exit (one JSON document under --json, else the reason on stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from placeflow.errors import EXIT_USAGE, UsageError
from placeflow.store.dbfile import check_warehouse
from placeflow.store.warehouse import DEFAULT_DB
from placeflow.support.text import printable

QUIET_HELP = "no live progress display on the terminal"


def add_db(p: Any) -> None:
    """`--db PATH`, the DuckDB warehouse (a parser or an argument group)."""
    p.add_argument("--db", default=DEFAULT_DB, help=f"DuckDB warehouse (default {DEFAULT_DB})")


def check_db_arg(args: argparse.Namespace) -> None:
    """`NotAWarehouse` (exit 2) when the command's `--db` names a directory or a file that is
    not a DuckDB database: said before the command reads or spends anything."""
    db = getattr(args, "db", None)
    if isinstance(db, str):
        check_warehouse(db)


def add_json(p: Any, help: str = "print one machine-readable summary") -> None:
    """`--json`, with what the command then prints."""
    p.add_argument("--json", action="store_true", help=help)


def add_quiet(p: Any) -> None:
    """`-q/--quiet`: no live progress display (it is drawn only on a terminal anyway)."""
    p.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)


def one_command(add_parser: Callable[[Any], object], argv: Sequence[str] | None = None) -> int:
    """`python -m placeflow.X_cli COMMAND ...`: a parser of that one sub-command (added by
    `add_parser`), dispatched by its `func` as `placeflow COMMAND ...` is; the exit code."""
    parser = argparse.ArgumentParser(prog="placeflow")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        check_db_arg(args)
    except UsageError as exc:
        return fail(str(exc), code=EXIT_USAGE, as_json=bool(getattr(args, "json", False)))
    return int(args.func(args))


def fail(message: str, *, code: int, as_json: bool, prog: str = "placeflow") -> int:
    """An error exit: `{"exit_code", "error"}` on stdout under --json, else `prog: message` on
    stderr; returns `code`."""
    if as_json:
        print(json.dumps({"exit_code": code, "error": message}))
    else:
        print(printable(f"{prog}: {message}"), file=sys.stderr)  # it may quote a server
    return code
