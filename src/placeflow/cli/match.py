"""`placeflow not-a-match`: mark two places as different, so the fuzzy pass never merges them.

placeflow not-a-match KEY_A KEY_B [--note TEXT] [--db PATH]
"""

from __future__ import annotations

import argparse
from typing import Any

from placeflow.cli.args import add_db
from placeflow.errors import EXIT_OK
from placeflow.pipeline.notamatch import mark_not_a_match
from placeflow.state.runstate import utc_now
from placeflow.writer import Warehouse


def add_parser(sub: Any) -> None:
    """Add `not-a-match` to the CLI's subparsers (its handler in `func`)."""
    p = sub.add_parser(
        "not-a-match",
        help="mark two places as different: later runs never merge them",
        description="Record in the warehouse's not_a_match table that the places KEY_A and"
        " KEY_B (their place_key) are different places. Every later run with --dedupe fuzzy"
        " keeps them apart and sends each of them.",
    )
    p.add_argument("key_a", metavar="KEY_A", help="place_key of one place")
    p.add_argument("key_b", metavar="KEY_B", help="place_key of the other")
    p.add_argument("--note", default=None, metavar="TEXT", help="why they differ")
    add_db(p)
    p.set_defaults(func=not_a_match_command)


def not_a_match_command(args: argparse.Namespace) -> int:
    with Warehouse(args.db) as wh:
        a, b = mark_not_a_match(wh.live(), args.key_a, args.key_b, note=args.note, now=utc_now())
    print(f"not a match: {a} {b}")
    return EXIT_OK
