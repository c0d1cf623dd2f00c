"""`placeflow export`: argparse wiring for warehouse loads (hooked into the CLI by `add_parser`).

    placeflow export --db PATH --to DEST [--tables places_latest,place_changes,...] [--full]
                     [--json]

Exit codes: 0 exported (tables asked for but absent from the warehouse are named, not fatal);
1 the export failed (the destination is left as the last clean export; run it again);
2 bad arguments (unknown table, unusable destination, a password in the URL, no warehouse at
--db).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from placeflow.cli.args import add_db, add_json, add_quiet, fail, one_command, print_json, result
from placeflow.config import postgres_password, storage_settings
from placeflow.errors import EXIT_OK, EXIT_USAGE, PlaceflowError
from placeflow.exporters.summary import ExportSummary
from placeflow.exporters.tables import DEFAULT_TABLES, TABLES

PROG = "placeflow export"
"""How its errors begin on stderr."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `export` sub-command to a subparsers object; its handler (`func`) is `main`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "export",
        help="load the place tables into Parquet files, Delta tables or PostgreSQL (incremental)",
        description=(
            "Send the place tables to a warehouse: Parquet files under a directory or file://"
            " URL, Delta tables under a delta:// URL, Parquet or Delta in object storage"
            " (s3://BUCKET/PREFIX, delta+s3://BUCKET/PREFIX: configured by the AWS_* variables),"
            " or a postgresql:// URL (the password from PGPASSWORD; a URL carrying one is"
            " refused). Only what changed since the last export to the same destination is sent."
        ),
    )
    add_db(p)
    p.add_argument(
        "--to",
        required=True,
        dest="to",
        metavar="DEST",
        help="a directory, file:///path, delta:///path, s3://bucket/prefix,"
        " delta+s3://bucket/prefix or postgresql://user@host:port/db",
    )
    p.add_argument(
        "--tables",
        default=None,
        help=f"comma-separated, of {', '.join(TABLES)} (default {','.join(DEFAULT_TABLES)})",
    )
    p.add_argument(
        "--full", action="store_true", help="send every row again, not only what changed"
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="say which tables and how many rows an export would send (above the watermarks"
        " the warehouse records for DEST), sending and writing nothing",
    )
    add_json(p, "print one JSON summary")
    add_quiet(p)
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    """Run one export from parsed arguments; print its summary; return the exit code."""
    from pathlib import Path

    from placeflow.exporters.export import estimate, export  # pyarrow loads only to export

    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    if not Path(args.db).exists():
        said = f"no warehouse at {args.db}: a run creates it"
        return fail(said, code=EXIT_USAGE, as_json=args.json, prog=PROG)
    try:
        if args.estimate:  # what it would send, sending and writing nothing
            priced = estimate(args.db, args.to, tables, full=args.full)
            _print(priced, as_json=args.json, quiet=args.quiet, status="estimated")
            return EXIT_OK
        summary = export(
            args.db, args.to, tables, full=args.full, password=postgres_password(),
            storage=storage_settings(),
        )  # fmt: skip
    except PlaceflowError as exc:  # codes by class: placeflow.errors.EXIT_CODES
        return fail(exc, as_json=args.json, prog=PROG)
    except ValueError as exc:
        return fail(exc, code=EXIT_USAGE, as_json=args.json, prog=PROG)
    _print(summary, as_json=args.json, quiet=args.quiet)
    return EXIT_OK


def _print(
    summary: ExportSummary, *, as_json: bool, quiet: bool = False, status: str = "ok"
) -> None:
    if as_json:
        print_json(result(summary.as_dict(), status=status))
        return
    if quiet:
        return
    mode = "full" if summary.full else "incremental"
    if status == "estimated":
        mode += ", an estimate: nothing sent, nothing written"
    print(f"export {summary.export_id} to {summary.destination} ({mode}): {summary.rows} rows")
    for t in summary.tables:
        files = f" in {', '.join(t.files)}" if t.files else ""
        safe = f" ({t.made_safe} values made safe for the destination)" if t.made_safe else ""
        print(f"  {t.table}: {t.rows} rows{files}{safe}")
    if summary.missing:
        print(f"  not in this warehouse (not exported): {', '.join(summary.missing)}")


def run(argv: list[str] | None = None) -> int:
    """`python -m placeflow.cli.export export ...`, the same as `placeflow export ...`."""
    return one_command(add_parser, argv)


if __name__ == "__main__":
    sys.exit(run())
