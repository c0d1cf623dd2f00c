"""`placeflow matches` and `placeflow not-a-match`: review the merges a run's fuzzy dedupe made,
with their evidence, and undo a wrong one for every later run.

placeflow matches RUN_ID [--db PATH] [--out FILE.csv|FILE.parquet|-] [--json [--nl]] [-q]
placeflow not-a-match REF_A REF_B [--run RUN_ID] [--note TEXT] [--undo] [--db PATH] [--json]

A REF is FILE:ROW, id:VALUE or a place key (`placeflow.pipeline.notamatch`). The evidence is a
JSON object (each comparison's level, in words, and its match weight); `--out -` writes the
merges as CSV to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from placeflow.cli.args import (
    add_db,
    add_json,
    add_nl,
    add_quiet,
    print_json,
    print_list,
    result,
    say,
)
from placeflow.errors import EXIT_OK, UsageError
from placeflow.support.text import printable


def add_parser(sub: Any) -> None:
    """Add `matches` and `not-a-match` to the CLI's subparsers (their handlers in `func`)."""
    m = sub.add_parser(
        "matches",
        help="list the merges a run's fuzzy dedupe made, with their evidence",
        description="List every place the fuzzy dedupe of RUN_ID merged into another (of the"
        " same run, or one an earlier run sent): both rows as the input had them (file, row,"
        " id, name, street, city, phone), the match probability and the evidence (each"
        " comparison's level and match weight). --out writes them all for review; a wrong"
        " merge is undone for later runs with `placeflow not-a-match`.",
    )
    m.add_argument("run_id", metavar="RUN_ID")
    m.add_argument(
        "--out", default=None, metavar="FILE",
        help="write them to a .csv or .parquet, or - for CSV on stdout",
    )  # fmt: skip
    add_db(m)
    add_json(m, help="print the merges as one JSON document")
    add_nl(m)
    add_quiet(m)
    m.set_defaults(func=matches_command)
    p = sub.add_parser(
        "not-a-match",
        help="mark two places as different: later runs never merge them",
        description="Record that the places of two rows are different places (the"
        " not_a_match table): every later run keeps them apart and sends each of them. Name"
        " each row as FILE:ROW (the data row number, header excluded), id:VALUE (the file's id"
        " column) or a place key; the newest run that read it unless --run says which. A"
        " reference no row answers is refused (exit 2).",
    )
    p.add_argument("ref_a", metavar="REF_A", help="FILE:ROW, id:VALUE or a place key")
    p.add_argument("ref_b", metavar="REF_B", help="the other row, named the same ways")
    p.add_argument("--run", default=None, metavar="RUN_ID", help="the run whose rows are named")
    p.add_argument("--note", default=None, metavar="TEXT",
                   help="why they differ (marked again, the notes before are kept)")  # fmt: skip
    p.add_argument("--undo", action="store_true",
                   help="take the mark back: later runs may merge the two again")  # fmt: skip
    add_db(p)
    add_json(p, help="print what was marked as one JSON document")
    add_quiet(p)
    p.set_defaults(func=not_a_match_command)


def not_a_match_command(args: argparse.Namespace) -> int:
    from placeflow.pipeline.notamatch import (
        mark_not_a_match,
        note_of,
        resolve,
        undo_not_a_match,
    )
    from placeflow.state.runstate import utc_now
    from placeflow.store.writer import Writer

    if args.undo and args.note is not None:
        raise UsageError("--undo takes the mark back: leave out --note")
    with Writer(args.db) as wh:
        con = wh.con
        a = resolve(con, args.ref_a, args.run)
        b = resolve(con, args.ref_b, args.run)
        pair: tuple[str, str]
        if args.undo:
            note = undo_not_a_match(con, a.own_key, b.own_key)
            pair = (min(a.own_key, b.own_key), max(a.own_key, b.own_key))
        else:
            pair = mark_not_a_match(con, a.own_key, b.own_key, note=args.note, now=utc_now())
            note = note_of(con, pair)
    if args.json:
        sides = [
            {"reference": r.reference, "own_key": r.own_key, "run_id": r.run_id,
             "source_file": r.source_file, "source_row": r.source_row, "source_id": r.source_id}
            for r in (a, b)
        ]  # fmt: skip
        doc = {"not_a_match": list(pair), "rows": sides, "note": note, "undone": args.undo}
        print_json(result(doc, status="undone" if args.undo else "marked"))
        return EXIT_OK
    for r in (a, b):
        said = f"{r.source_file}:{r.source_row}" + (f" (id {r.source_id})" if r.source_id else "")
        say(args, f"{r.reference}: {said}, place {r.own_key} (run {r.run_id})")
    if args.undo:
        say(args, f"undone: {pair[0]} {pair[1]} may be merged again by later runs")
    else:
        noted = f" (notes: {note})" if note else ""
        say(args, f"not a match: {pair[0]} {pair[1]}: later runs keep them apart{noted}")
    return EXIT_OK


def matches_command(args: argparse.Namespace) -> int:
    from placeflow.pipeline.notamatch import merges
    from placeflow.reporting.rows import write_rows
    from placeflow.state.runread import stored_run
    from placeflow.store.warehouse import reading
    from placeflow.support.csvsafe import csv_safe

    with reading(args.db) as con:
        stored_run(con, args.run_id)  # an unknown run: UnknownRun, exit 2
        found = merges(con, args.run_id)
    if args.out == "-":
        if args.json or args.nl:
            raise UsageError("--out - prints the merges as CSV: leave out --json and --nl")
        sys.stdout.write(csv_safe(found).write_csv())
        return EXIT_OK
    if args.out:
        write_rows(found, Path(args.out))
    merged = [{**m, "evidence": _evidence(m["evidence"])} for m in found.to_dicts()]
    if args.nl:
        print_list(merged, nl=True)
        return EXIT_OK
    if args.json:
        print_json(result({"run_id": args.run_id, "merges": merged, "out": args.out}))
        return EXIT_OK
    print(f"run {args.run_id}: {found.height:,} merge(s) by the fuzzy dedupe")
    for m in merged:
        print(
            printable(
                f"  {_side(m, '')}  ->  {_side(m, 'matched_')}  p={m['match_probability']:.4f}"
            )
        )
        for name, said in m["evidence"].items():
            weight = float(said.get("weight") or 0.0)
            print(printable(f"      {name}: {said.get('level')} (weight {weight:+.2f})"))
    if args.out:
        say(args, f"written to {args.out}")
    return EXIT_OK


def _evidence(stored: str | None) -> dict[str, Any]:
    """A merge's evidence as an object: each comparison -> its level in words and its weight
    (labels a run stored in Splink's or SQL's terms are put in words here too)."""
    from placeflow.pipeline.match.model import plain_label

    found: dict[str, Any] = json.loads(stored or "{}")
    for name, said in found.items():
        if isinstance(said, dict) and isinstance(said.get("level"), str):
            null = said.get("weight") in (0, 0.0) and said["level"].endswith(" is NULL")
            said["level"] = plain_label(name, said["level"], null=null or None)
    return found


def _side(m: dict[str, Any], prefix: str) -> str:
    """One side of a merge as the input had it: file:row (id), name, street, city."""
    row = m["matched_source_row"] if prefix else m["source_row"]
    file = m[f"{prefix}file"] if prefix else m["source_file"]
    ident = m[f"{prefix}id"] if prefix else m["source_id"]
    where = ", ".join(str(v) for v in (m[f"{prefix}name" if prefix else "poi_name"],
                                       m[f"{prefix}street"], m[f"{prefix}city"]) if v)  # fmt: skip
    return f"{Path(str(file)).name}:{row}" + (f" (id {ident})" if ident else "") + f" {where}"
