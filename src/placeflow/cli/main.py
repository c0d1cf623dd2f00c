"""The `placeflow` command: parse, build config, call the library, map errors to exit codes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from placeflow.cli import budget, export, match, refresh, report, research, rows, run, sandbox
from placeflow.cli.args import run_command

EPILOG = (
    "exit codes (docs/cli.md has the table with each status): 0 completed; 1 failed or stopped"
    " part way, a full disk too (`placeflow resume RUN_ID` finishes it); 2 bad arguments or"
    " input, or a --db that cannot be written or is not a DuckDB warehouse; 3 refused by a"
    " budget or balance check, nothing sent (or stopped when credits ran out); 4 places left to"
    " another run still have no answer; 5 the service billed work twice (booked in the ledger"
    " and named); 6 every input row was rejected; 130 stopped by Ctrl-C (`placeflow resume"
    " RUN_ID` finishes it; a second Ctrl-C, or --cancel-on-interrupt, also cancels the"
    " submitted jobs). Settings: --db, else PLACEFLOW_DB, else placeflow.toml or pyproject's"
    " [tool.placeflow], else the default"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placeflow",
        description="Bulk place-data ETL against the place-data service, with a sandbox emulator.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"placeflow {_version()}")
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


def _version() -> str:
    """The installed distribution's version (the package's metadata, not an import)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("placeflow")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, to say it again
    # a CSV or a directory as --db is refused before anything is done; an error of placeflow's
    # is said once (one JSON document under --json); a closed pipe ends it quietly
    return run_command(args, getattr(args, "func", run.dispatch))


if __name__ == "__main__":
    sys.exit(main())
