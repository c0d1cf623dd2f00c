"""`placeflow budget`: the credit budgets kept in the warehouse, and the service's own quota.

    placeflow budget [--db PATH] [--json]
    placeflow budget set --credits N --per day|week|month [--for run|refresh|research]
                         [--warn-at PERCENT] [--db PATH] [--json]
    placeflow budget clear [--per day|week|month] [--for run|refresh|research] [--db PATH] [--json]

Every run, resume, refresh and research is checked against the budgets that apply to it
before it spends (`placeflow.state.budgets`); this command sets, shows and clears them.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from placeflow.cli.args import DB_HELP, add_db, add_json, add_quiet, say
from placeflow.errors import EXIT_OK, PlaceflowError
from placeflow.state.budgets import KINDS, PERS, WARN_AT
from placeflow.support.text import printable

SERVICE_KEYS = ("quota_limit", "current_usage", "period", "reset_date")


def add_parser(sub: Any) -> None:
    """Add `budget` (with `set` and `clear`) to the CLI's subparsers."""
    p = sub.add_parser(
        "budget",
        help="show, set or clear the credit budgets every spending command is checked against",
        description="Show the credit budgets kept in the warehouse, each in its current period"
        " (spent = charged + held, from the credit ledger and the runs still spending; left ="
        " credits - spent), and the service's own quota (GET /v1/usage). Every run, resume,"
        " refresh and research is refused (exit 3) when its estimate passes what a budget that"
        " applies to it has left; a refresh spends within it, the places most likely changed"
        " first. A month is the service's when its reset_date is known (to it, or from it when"
        " it lies behind), else the calendar month (UTC); a week from Monday (UTC); a day is"
        " the UTC day.",
    )
    add_db(p)
    add_json(p, help="print the budgets and the service's quota as one JSON document")
    add_quiet(p)
    p.set_defaults(func=show_command)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    s = actions.add_parser(
        "set",
        help="set a budget (replacing the one of the same --per and --for)",
        description="Set a budget of N credits per day, week or month, for every spending"
        " command or (--for) one kind of them: run (runs of files and their resumes), refresh"
        " or research (research --from-warehouse too). It replaces the budget of the same"
        " --per and --for.",
    )
    s.add_argument("--credits", type=int, required=True, metavar="N", help="credits per period")
    s.add_argument("--per", required=True, choices=PERS, help="the period")
    s.add_argument(
        "--for",
        dest="applies_to",
        choices=KINDS,
        default=None,
        help="the kind of command it governs (default: every spending command)",
    )
    s.add_argument(
        "--warn-at",
        type=float,
        default=100 * WARN_AT,
        metavar="PERCENT",
        help="warn (stderr, the run's summary, an event) once this share of the budget is"
        f" spent (default {100 * WARN_AT:g})",
    )
    _db_json(s)
    s.set_defaults(func=set_command)
    c = actions.add_parser(
        "clear",
        help="remove budgets (all of them without --per and --for)",
        description="Remove the budgets of --per and --for; without them, every budget.",
    )
    c.add_argument("--per", choices=PERS, default=None, help="only the budgets of this period")
    c.add_argument("--for", dest="applies_to", choices=KINDS, default=None,
                   help="only the budgets for this kind of command")  # fmt: skip
    _db_json(c)
    c.set_defaults(func=clear_command)


def _db_json(p: argparse.ArgumentParser) -> None:
    """--db and --json after the action too, without overriding those given before it."""
    p.add_argument("--db", default=argparse.SUPPRESS, help=DB_HELP)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print the result as one JSON document")  # fmt: skip


def set_command(args: argparse.Namespace) -> int:
    from placeflow.state.budgets import set_budget
    from placeflow.store.writer import Writer

    with Writer(args.db) as wh:
        budget = set_budget(
            wh.con, credits=args.credits, per=args.per, applies_to=args.applies_to,
            warn_at=args.warn_at / 100, now=datetime.now(UTC),
        )  # fmt: skip
    doc = {"credits": budget.credits, "per": budget.per, "for": budget.applies_to,
           "warn_at": budget.warn_at}  # fmt: skip
    if args.json:
        print(json.dumps({"budget": doc, "status": "set", "exit_code": EXIT_OK}, sort_keys=True))
    else:
        say(args, f"placeflow: {budget.name()} set (warns past {100 * budget.warn_at:g}%)")
    return EXIT_OK


def clear_command(args: argparse.Namespace) -> int:
    from placeflow.state.budgets import clear_budgets
    from placeflow.store.writer import Writer

    if not Path(args.db).exists():
        cleared = 0
    else:
        with Writer(args.db) as wh:
            cleared = clear_budgets(wh.con, per=args.per, applies_to=args.applies_to)
    if args.json:
        print(json.dumps({"cleared": cleared, "status": "cleared", "exit_code": EXIT_OK}))
    else:
        say(args, f"placeflow: {cleared} budget(s) cleared")
    return EXIT_OK


def show_command(args: argparse.Namespace) -> int:
    from placeflow.state.budgets import reset_date_of, standings
    from placeflow.store.warehouse import reading

    service = service_quota(args.db if Path(args.db).exists() else None)
    now = datetime.now(UTC)
    reset = reset_date_of(service.get("reset_date"), service.get("period"))
    found = []
    if Path(args.db).exists():
        with reading(args.db) as con:
            found = standings(con, now, reset_date=reset)
    quota = {k: service.get(k) for k in SERVICE_KEYS}
    doc = {"budgets": [s.as_dict() for s in found], "service": quota}
    if args.json:
        print(json.dumps({**doc, "status": "ok", "exit_code": EXIT_OK}, sort_keys=True))
        return EXIT_OK
    if not found:
        print("placeflow: no budget set (`placeflow budget set --credits N --per month`)")
    for s in found:
        print(f"  {s.said()}")
    if quota["quota_limit"] is not None:
        print(
            f"  the service: {quota['current_usage']:,} of {quota['quota_limit']:,} credits used"
            f" ({quota['period']}, resets {quota['reset_date']})"
        )
    return EXIT_OK


def service_quota(db: str | None) -> dict[str, Any]:
    """The key's quota as GET /v1/usage gives it (values None, said on stderr, when the
    service cannot be asked); without a key, the embedded sandbox kept beside `db`."""
    from placeflow.config import load_settings
    from placeflow.runner.target import open_target

    try:
        settings = load_settings()
        with (
            open_target(api_key=settings.api_key, base_url=settings.base_url, db=db) as target,
            target.client() as api,
        ):
            usage = api.usage()
    except PlaceflowError as exc:
        said = f"placeflow: warning: the service's quota is unknown: {exc}"
        print(printable(said), file=sys.stderr)
        return {}
    return {
        "quota_limit": usage.quota_limit,
        "current_usage": usage.current_usage,
        "period": usage.period,
        "reset_date": usage.reset_date,
        "available": usage.spendable,
    }
