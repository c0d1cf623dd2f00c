"""`placeflow rows` and `placeflow query`: argparse wiring (hooked into the CLI by `add_parsers`).

    placeflow rows RUN_ID [--db PATH] --out FILE.csv|FILE.parquet [--no-original]
                   [--only DISPOSITION ...] [--json]
    placeflow query "SQL" [--db PATH] [--json | --csv]

Exit codes: 0 done; 2 no warehouse, no such run, a bad --out name, or SQL that fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from placeflow.cli.args import add_db, add_json, fail
from placeflow.errors import EXIT_OK, EXIT_USAGE, UsageError

DISPOSITIONS = ("submitted", "duplicate", "skipped_fresh", "held_failing", "rejected")


def add_parsers(sub: Any) -> None:
    """Add the `rows` and `query` sub-commands; each carries its handler (`func`)."""
    rows = sub.add_parser(
        "rows",
        help="write a run's input rows with their outcomes to CSV or Parquet",
        description=(
            "Every input row of the run, in input order: the file's own columns (read from the"
            " file as it is now, when it is still there), then its disposition (submitted,"
            " duplicate, skipped_fresh, held_failing, rejected), the reject reason, its"
            " normalised fields and its place's latest outcome (the run_row_outcomes view)."
        ),
    )
    rows.add_argument("run_id", metavar="RUN_ID")
    add_db(rows)
    rows.add_argument("--out", required=True, type=Path, metavar="FILE",
                      help="FILE.csv or FILE.parquet")  # fmt: skip
    rows.add_argument("--no-original", dest="original", action="store_false",
                      help="leave out the input file's own columns")  # fmt: skip
    rows.add_argument("--only", action="append", choices=DISPOSITIONS, metavar="DISPOSITION",
                      help="only the rows of this disposition (repeatable), e.g. --only"
                      " rejected: " + ", ".join(DISPOSITIONS))  # fmt: skip
    add_json(rows, "print one JSON summary")
    rows.set_defaults(func=rows_main)
    q = sub.add_parser(
        "query",
        help="run read-only SQL on the warehouse and print the result",
        description=(
            "Read-only SQL on the warehouse (tables runs, run_rows, rejects, jobs, ...; views"
            " places_latest, run_row_outcomes, run_credits, place_outcomes). No other file is"
            " read or written: read_csv, COPY, ATTACH and EXPORT are refused."
        ),
    )
    q.add_argument("sql", metavar="SQL")
    add_db(q)
    shape = q.add_mutually_exclusive_group()
    add_json(shape, "print the rows as one JSON array")
    shape.add_argument("--csv", action="store_true", help="print the rows as CSV")
    q.set_defaults(func=query_main)


def _fail(as_json: bool, message: str) -> int:
    return fail(message, code=EXIT_USAGE, as_json=as_json)


def rows_main(args: argparse.Namespace) -> int:
    from placeflow.reporting.rows import row_outcomes, write_rows

    try:
        if args.out.suffix.lower() not in (".csv", ".parquet"):
            raise UsageError(f"--out {args.out}: name a .csv or .parquet file")
        frame = row_outcomes(args.db, args.run_id, original=args.original, only=args.only)
        write_rows(frame, args.out)
    except UsageError as exc:
        return _fail(args.json, str(exc))
    counts = dict(frame.group_by("disposition").len().sort("disposition").iter_rows())
    if args.json:
        print(json.dumps({"exit_code": EXIT_OK, "out": str(args.out), "rows": frame.height,
                          "dispositions": counts}, sort_keys=True))  # fmt: skip
    else:
        by = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        print(f"{frame.height:,} rows of {args.run_id} written to {args.out} ({by})")
    return EXIT_OK


def query_main(args: argparse.Namespace) -> int:
    import polars as pl

    from placeflow.reporting.rows import query
    from placeflow.support.csvsafe import csv_safe

    try:
        frame = query(args.db, args.sql)
    except UsageError as exc:
        return _fail(args.json, str(exc))
    if args.json:
        print(json.dumps(frame.to_dicts(), default=str))
    elif args.csv:  # formulas inert, no control character: as every CSV placeflow writes
        sys.stdout.write(csv_safe(frame).write_csv())
    else:
        with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=60, tbl_hide_dataframe_shape=True,
                       tbl_hide_column_data_types=True):  # fmt: skip
            print(frame)
    return EXIT_OK
