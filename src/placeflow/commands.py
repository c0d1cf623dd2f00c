"""The pipeline's commands: run, resume, runs, estimate. Thin: parse, call, print, exit code."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placeflow.config import apply_prefect_defaults, load_settings
from placeflow.pipeline.columns import MAPPABLE
from placeflow.report import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

DEFAULT_DB = "data/placeflow.duckdb"


def _mapping(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not column:
            raise ValueError(f"--map takes FIELD=COLUMN, not {pair!r}")
        if field not in MAPPABLE:
            raise ValueError(f"--map field {field!r} is not one of {', '.join(MAPPABLE)}")
        out[field] = column
    return out


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="CSV or Parquet files, or globs")
    p.add_argument(
        "--mode",
        choices=("validate", "enrich"),
        default="enrich",
        help="validate (existence and status) or enrich (attributes); default enrich",
    )
    p.add_argument(
        "--attributes",
        default="",
        metavar="a,b,...",
        help="enrich attributes (default: opening_hours, phone, website, existence, open_closed)",
    )
    p.add_argument("--include-summary", action="store_true", help="also ask for a place summary")
    p.add_argument("--db", default=DEFAULT_DB, help=f"DuckDB warehouse (default {DEFAULT_DB})")
    p.add_argument(
        "--max-age",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="places with an outcome younger than this are not sent again (default 30)",
    )
    p.add_argument("--force", action="store_true", help="send fresh places again")
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="take a place field from a column (repeatable), e.g. poi_name='Store Name'",
    )
    p.add_argument("--encoding", default="utf8", help="input text encoding (default utf8)")
    p.add_argument(
        "--route",
        choices=("auto", "sync", "job"),
        default="auto",
        help="synchronous calls, bulk jobs, or whichever takes fewer requests (auto)",
    )
    p.add_argument(
        "--chunk-rows",
        type=int,
        default=10_000,
        metavar="N",
        help="places per bulk job, 1 to 10,000 (default 10,000)",
    )
    p.add_argument("--json", action="store_true", help="print one machine-readable summary")


def add_run_parsers(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="validate or enrich places from files into DuckDB",
        description="Read, normalise and dedupe places, send what is not fresh,"
        " verify and load the results and the credits into DuckDB. Without"
        " PLACEFLOW_API_KEY it runs against an embedded sandbox.",
    )
    _common(run)
    run.add_argument(
        "--max-credits",
        type=int,
        default=None,
        metavar="N",
        help="refuse to start if the run could cost more than N credits",
    )
    resume = sub.add_parser(
        "resume",
        help="finish a run that stopped part way",
        description="Resume a run by id: re-attach to its submitted jobs,"
        " replay lost submissions, load what was not loaded.",
    )
    resume.add_argument("run_id", metavar="RUN_ID")
    resume.add_argument("--db", default=DEFAULT_DB, help=f"DuckDB warehouse (default {DEFAULT_DB})")
    resume.add_argument("--json", action="store_true", help="print one machine-readable summary")
    runs = sub.add_parser(
        "runs",
        help="recent runs with their counts and credits",
        description="List recent runs, newest first.",
    )
    runs.add_argument("--db", default=DEFAULT_DB, help=f"DuckDB warehouse (default {DEFAULT_DB})")
    runs.add_argument("--limit", type=int, default=20, help="how many runs (default 20)")
    runs.add_argument("--json", action="store_true", help="print JSON lines")
    est = sub.add_parser(
        "estimate",
        help="what a run would cost, spending nothing",
        description="Read, normalise, dedupe and check freshness, then print"
        " what a run would send and the most it could cost. Sends nothing.",
    )
    _common(est)


def dispatch(args: argparse.Namespace) -> int:
    if args.command in ("run", "resume"):
        return _run(args)
    if args.command == "runs":
        return _runs(args)
    if args.command == "estimate":
        return _estimate(args)
    raise ValueError(f"unknown command {args.command!r}")


def _flow_params(args: argparse.Namespace) -> dict[str, Any]:
    from placeflow.pipeline.plan import run_options

    attributes = [a.strip() for a in args.attributes.split(",") if a.strip()]
    mapping = _mapping(args.map)
    run_options(
        mode=args.mode,
        attributes=attributes,
        include_summary=args.include_summary,
        max_credits=args.max_credits,
        max_age=args.max_age,
        force=args.force,
        mapping=mapping,
        encoding=args.encoding,
        route=args.route,
        chunk_rows=args.chunk_rows,
    )  # checks them
    return {
        "inputs": list(args.inputs),
        "mode": args.mode,
        "attributes": attributes,
        "include_summary": args.include_summary,
        "db": args.db,
        "max_credits": args.max_credits,
        "max_age": args.max_age,
        "force": args.force,
        "mapping": mapping,
        "encoding": args.encoding,
        "route": args.route,
        "chunk_rows": args.chunk_rows,
    }


def _run(args: argparse.Namespace) -> int:
    params = (
        _flow_params(args)
        if args.command == "run"
        else {"resume_run_id": args.run_id, "db": args.db}
    )
    load_settings()  # a key without a base URL is refused here, before Prefect starts
    apply_prefect_defaults()
    from flows.place_refresh import place_refresh  # Prefect loads only for runs

    state: State[Any] = place_refresh(**params, return_state=True)  # type: ignore[assignment]
    data = state.result(raise_on_failure=False)
    if not isinstance(data, dict):
        print(f"placeflow: the run failed: {state.message or data}", file=sys.stderr)
        return EXIT_FAILED
    return _print_outcome(data, as_json=args.json)


def _print_outcome(data: dict[str, Any], *, as_json: bool) -> int:
    from placeflow.credits import RunSummary
    from placeflow.report import text_summary

    code = int(data.pop("exit_code", EXIT_OK))
    if as_json:
        print(json.dumps({**data, "exit_code": code}, sort_keys=True, default=str))
    elif "run_id" in data:
        print(text_summary(RunSummary(**data)))
    else:
        print(f"placeflow: {data.get('message') or data.get('status')}", file=sys.stderr)
    return code


def _runs(args: argparse.Namespace) -> int:
    from placeflow.warehouse import connect

    if not Path(args.db).exists():
        print(f"no runs yet: {args.db} does not exist")
        return EXIT_OK
    with connect(args.db, read_only=True) as con:
        cur = con.execute(
            "select r.run_id, r.created_at, r.status, r.mode, r.rows_read, r.rejected,"
            " r.duplicates, r.skipped_fresh, r.submitted, r.succeeded, r.failed,"
            " c.charged, c.usage_delta from runs r left join run_credits c using (run_id)"
            " order by r.created_at desc limit ?",
            [args.limit],
        )
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    if args.json:
        for row in rows:
            print(json.dumps(dict(zip(names, row, strict=True)), default=str))
        return EXIT_OK
    header = (
        "run",
        "started (UTC)",
        "status",
        "mode",
        "read",
        "rejected",
        "dups",
        "fresh",
        "sent",
        "ok",
        "failed",
        "charged",
        "usage Δ",
    )
    table = [header] + [
        (
            r[0],
            r[1].astimezone(UTC).strftime("%Y-%m-%d %H:%M") if r[1] else "",
            *("" if v is None else (f"{v:,}" if isinstance(v, int) else str(v)) for v in r[2:]),
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _estimate(args: argparse.Namespace) -> int:
    from placeflow.api.models import PricingCard
    from placeflow.emulator.pricing import pricing_card
    from placeflow.pipeline.plan import run_options
    from placeflow.pipeline.prepare import prepare
    from placeflow.warehouse import connect

    params = _flow_params(argparse.Namespace(**{**vars(args), "max_credits": None}))
    options = run_options(**{k: v for k, v in params.items() if k not in ("inputs", "db")})
    settings = load_settings()
    if settings.api_key is None:
        pricing = PricingCard.model_validate(pricing_card("http://sandbox"))
        target = "the embedded sandbox"
    else:
        import httpx

        assert settings.base_url is not None
        reply = httpx.get(f"{settings.base_url.rstrip('/')}/v1/pricing", timeout=30)
        pricing = PricingCard.model_validate(reply.json())
        target = settings.base_url
    now = datetime.now(UTC)
    if Path(args.db).exists():
        with connect(args.db, read_only=True) as con:
            prepared = prepare(params["inputs"], options, con=con, now=now, pricing=pricing)
    else:
        prepared = prepare(params["inputs"], options, con=None, now=now, pricing=pricing)
    c, e = prepared.counts, prepared.estimate
    out = {
        "rows_read": c.rows_read,
        "rejected": c.rejected,
        "duplicates": c.duplicates,
        "skipped_fresh": c.skipped_fresh,
        "to_send": c.to_send,
        "route": e.route,
        "credits_at_most": e.credits,
        "credits_per_place": e.credits_per_place,
        "requests_at_least": e.requests,
        "target": target,
    }
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        print(f"estimate against {target} (nothing sent, nothing spent):")
        for name, value in out.items():
            if name != "target":
                print(
                    f"  {name.replace('_', ' '):<20} {value:,}"
                    if isinstance(value, int)
                    else f"  {name.replace('_', ' '):<20} {value}"
                )
    return EXIT_OK if c.rows_read or not c.rejected else EXIT_USAGE
