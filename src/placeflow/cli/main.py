"""The `placeflow` command: parse, build config, call the library, map errors to exit codes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from placeflow.cli import budget, export, match, refresh, report, research, rows, run, sandbox
from placeflow.cli.args import check_db_arg
from placeflow.errors import EXIT_FAILED, PlaceflowError, exit_code
from placeflow.support.text import printable

EPILOG = (
    "exit codes: 0 success; 1 the run failed or stopped part way, a full disk too (see its "
    "message; `placeflow resume RUN_ID` finishes it); 2 bad arguments, unreadable input or a "
    "--db that cannot be written or is not a DuckDB warehouse; 3 refused before spending "
    "(over --max-credits or the key's balance) or stopped when credits ran out; 130 stopped "
    "by Ctrl-C (`placeflow resume "
    "RUN_ID` finishes it; a second Ctrl-C, or --cancel-on-interrupt, also cancels the "
    "submitted jobs)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placeflow",
        description="Bulk place-data ETL against the place-data service, with a sandbox emulator.",
        epilog=EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_run_parsers(sub)
    refresh.add_parsers(sub)
    research.add_parser(sub)
    export.add_parser(sub)
    report.add_parsers(sub)
    match.add_parser(sub)
    rows.add_parsers(sub)
    sandbox.add_parser(sub)
    budget.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, to say it again
    try:
        check_db_arg(args)  # a CSV or a directory as --db: refused before anything is done
        if hasattr(args, "func"):  # subcommands that carry their handler
            return int(args.func(args))
        return run.dispatch(args)
    except PlaceflowError as exc:  # codes by class: placeflow.errors.EXIT_CODES
        print(printable(f"placeflow: {exc}"), file=sys.stderr)  # it may quote a server
        code = exit_code(exc) or EXIT_FAILED
        if getattr(args, "json", False):  # under --json every exit path prints one document
            from placeflow.reporting.summary import error_document

            print(json.dumps(error_document(exc, code, getattr(args, "db", None)), sort_keys=True))
        return code


if __name__ == "__main__":
    sys.exit(main())
