"""The pipeline's commands: run, resume, estimate. Thin: parse, call, print, exit code."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from placeflow.cli.args import add_db, add_json, add_quiet, print_json, result, say
from placeflow.cli.carried import add_prefect, carried, watched
from placeflow.cli.options import add_option_flags, options_from_args
from placeflow.cli.submit import add_deployment_flags
from placeflow.config import load_settings, storage_settings
from placeflow.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, UsageError
from placeflow.options import RunOptions
from placeflow.support.lazy import collector_paused
from placeflow.support.text import printable

if TYPE_CHECKING:
    from placeflow.events import Event
    from placeflow.runner.ending import Outcome


def _common(p: argparse.ArgumentParser, *, command: str) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="CSV or Parquet files, or globs")
    add_db(p)
    add_option_flags(p, command=command)
    add_json(p)


def add_run_parsers(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="validate or enrich places from files into DuckDB",
        description="Read, normalise and dedupe places, send what is not fresh,"
        " verify and load the results and the credits into DuckDB. Without"
        " PLACEFLOW_API_KEY it runs against an embedded sandbox.",
    )
    _common(run, command="run")
    add_deployment_flags(run)
    resume = sub.add_parser(
        "resume",
        help="finish a run that stopped part way",
        description="Resume a run by id: re-attach to its submitted jobs,"
        " replay lost submissions, load what was not loaded.",
    )
    resume.add_argument("run_id", metavar="RUN_ID")
    add_db(resume)
    resume.add_argument(
        "--poll-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds to wait for bulk jobs before cancelling them (default: the run's own)",
    )
    resume.add_argument(
        "--resend-uncertain",
        action="store_true",
        help=RunOptions.model_fields["resend_uncertain"].description,
    )
    add_json(resume)
    for p in (run, resume):
        add_quiet(p)
        add_prefect(p)
        p.add_argument(
            "--cancel-on-interrupt",
            action="store_true",
            help="on Ctrl-C also ask the service to cancel the run's running jobs (their"
            " finished work is billed anyway; without it they finish and resume loads them)",
        )
    est = sub.add_parser(
        "estimate",
        help="what a run would cost, spending nothing",
        description="Read, normalise, dedupe and check freshness, then print"
        " what a run would send and the most it could cost. Sends nothing.",
    )
    _common(est, command="estimate")
    add_quiet(est)


def dispatch(args: argparse.Namespace) -> int:
    if args.command in ("run", "resume"):
        return _run(args)
    if args.command == "estimate":
        return _estimate(args)
    raise UsageError(f"unknown command {args.command!r}")


def _run(args: argparse.Namespace) -> int:
    if args.command == "run" and args.deployment is not None:
        from placeflow.cli.submit import submit

        return print_outcome(submit(args), as_json=args.json)  # a worker carries it out
    with collector_paused():  # what a run uses, imported at once
        from placeflow.cli.interrupt import Interrupt
        from placeflow.cli.preflight import FINISHED, check_db, check_inputs, stored_status
        from placeflow.reporting.published import WrittenLater
        from placeflow.runner.ending import open_service, run_ending, run_outcome
        from placeflow.runner.steps import direct

    if getattr(args, "no_wait", False):
        raise UsageError("--no-wait goes with --deployment (a run here is waited for)")
    began = time.monotonic()
    if args.command == "run":
        params: dict[str, Any] = {
            "inputs": list(args.inputs),
            "db": args.db,
            "options": options_from_args(args),  # checked here, before the run starts
        }
        storage = storage_settings()  # s3:// inputs are listed, not read, here
        for notice in check_inputs(params["inputs"], params["options"], storage):  # before it
            say(args, f"placeflow: {notice}", err=True)
        check_db(args.db)
    else:
        stored = stored_status(args.db, args.run_id)
        check_db(args.db)  # a read-only warehouse is said here, as for run
        if stored.status in FINISHED:  # nothing to do: change nothing, say so
            return _finished(stored.run_id, stored.status, args.db, as_json=args.json)
        params = {"resume_run_id": args.run_id, "db": args.db}
        given = {"poll_timeout": args.poll_timeout, "resend_uncertain": args.resend_uncertain}
        given = {name: value for name, value in given.items() if value not in (None, False)}
        if given:  # only what was given: the rest stays the run's own
            params["options"] = RunOptions(**given)
    settings = load_settings()  # a key without a base URL is refused here, before anything
    watch = watched(args, settings)
    if watch is not None:  # a live display: the jobs polled often enough to move
        params["options"] = (params.get("options") or RunOptions()).model_copy(
            update={"watch_every": watch}
        )
    stop = Interrupt(
        db=args.db, as_json=args.json, cancel_jobs=args.cancel_on_interrupt,
        run_id=params.get("resume_run_id"),
        command=_said(args) if args.command == "run" else None,
    )  # fmt: skip

    def flow() -> Callable[..., Any]:
        from placeflow.flows.run import run_files

        return run_files

    later = WrittenLater()  # the run's files, written once its summary is printed

    def local(on_event: Callable[[Event], None] | None) -> Outcome:
        return run_outcome(
            run_ending(later),
            service=lambda: open_service(settings, db=args.db, quiet=args.quiet),
            step=direct, on_event=on_event, storage=settings.storage, **params,
        )  # fmt: skip

    data, message = carried(
        args, settings, title=f"placeflow {args.command}", flow=flow, params=params,
        local=local, stop=stop,
    )  # fmt: skip
    if not isinstance(data, dict):
        data = {"status": "failed", "message": f"the run failed: {message or data}"}
        data["exit_code"] = EXIT_FAILED
    if "next" in data and data["next"] is None and _said(args) is not None:
        data["next"] = _said(args)  # a stop before the run was recorded: the same command
    wall = time.monotonic() - began
    code = print_outcome(
        data, as_json=args.json, wall_seconds=wall, resume_db=args.db, quiet=args.quiet
    )
    sys.stdout.flush()  # the summary is out before the report is written
    later.write()
    return code


def _said(args: argparse.Namespace) -> str | None:
    """The command as the user gave it, to say it again (None when not known)."""
    argv = getattr(args, "argv", None)
    return None if argv is None else shlex.join(["placeflow", *argv])


def _finished(run_id: str, status: str, db: str, *, as_json: bool) -> int:
    """A resume of a run that has nothing left to do: one line (or document), nothing written."""
    message = f"run {run_id} is finished ({status}); nothing to resume"
    if status == "refused":
        message += "; run the command again with a larger --max-credits or more credits"
    if as_json:
        print_json(result({"run_id": run_id, "status": status, "message": message, "db": db}))
    else:
        print(f"placeflow: {message}")
    return EXIT_OK


def print_outcome(
    data: dict[str, Any],
    *,
    as_json: bool,
    wall_seconds: float | None = None,
    resume_db: str | None = None,
    quiet: bool = False,
) -> int:
    """Print a flow's summary (text, or one JSON document) and return its exit code; with
    `resume_db`, an interrupted run's JSON names the command that finishes it (`next`)."""
    from placeflow.pipeline.account import RunSummary
    from placeflow.reporting.summary import text_summary

    code = int(data.pop("exit_code", EXIT_OK))
    report = data.pop("report", None)  # the HTML report a flow wrote, when it wrote one
    warnings = [*(data.get("inputs") or {}).get("warnings", []),
                *(data.get("budget_warnings") or [])]  # fmt: skip
    for warning in [] if quiet else warnings:
        print(printable(f"placeflow: warning: {warning}"), file=sys.stderr)
    if data.get("status") == "refused" and data.get("message"):  # one line, whatever the form
        print(printable(f"placeflow: refused: {data['message']}"), file=sys.stderr)
    if as_json:
        extra: dict[str, Any] = {"report": report} if report else {}
        if wall_seconds is not None:
            extra["wall_seconds"] = round(wall_seconds, 3)
        if resume_db and data.get("run_id") and data.get("status") == "interrupted":
            extra["next"] = f"placeflow resume {data['run_id']} --db {resume_db}"
        if code != EXIT_OK:  # an end that is not a success reads as every error document does
            extra["error"] = data.get("error") or data.get("message") or data.get("status")
        print(json.dumps({**data, **extra, "exit_code": code}, sort_keys=True, default=str))
    elif data.get("run_id"):
        print(text_summary(RunSummary(**data), wall_seconds=wall_seconds))
        if report:
            print(f"  report: {report}")
    elif code == EXIT_OK:  # ended well without a run (a refresh with nothing stale)
        if not quiet:
            print(printable(f"placeflow: {data.get('message') or data.get('status')}"))
    else:
        print(printable(f"placeflow: {data.get('message') or data.get('status')}"), file=sys.stderr)
    return code


def _estimate(args: argparse.Namespace) -> int:
    from placeflow.pipeline.mapping_report import describe, input_report
    from placeflow.runner.prepare import preview
    from placeflow.runner.target import open_target

    options = options_from_args(args)
    settings = load_settings()
    with open_target(
        api_key=settings.api_key, base_url=settings.base_url, limits=settings.limits, db=args.db
    ) as target:
        seen = preview(
            args.inputs, options=options, db=args.db, target=target, storage=settings.storage
        )
    e = seen.estimate
    out = {
        "rows_read": seen.rows_read,
        "rejected": seen.rejected,
        "duplicates": seen.duplicates,
        "skipped_fresh": seen.skipped_fresh,
        "to_send": seen.to_send,
        "route": e.route,
        "credits_at_most": e.credits,
        "credits_per_place": e.credits_per_place,
        "requests_at_least": e.requests,
        "target": "the embedded sandbox" if settings.uses_sandbox else str(settings.base_url),
    }
    inputs = input_report(seen.stages)  # which column feeds which field, per file
    for warning in inputs.get("warnings", []):
        say(args, f"placeflow: warning: {warning}", err=True)
    code = EXIT_OK if seen.rows_read or not seen.rejected else EXIT_USAGE
    if options.max_credits is not None:  # would `run` with the same options be refused?
        out["max_credits"] = options.max_credits
        out["would_refuse"] = e.credits > options.max_credits
    code = EXIT_OK if seen.rows_read or not seen.rejected else EXIT_USAGE
    if seen.refusal is not None:  # the run it prices would be refused: said, exit 3
        code = EXIT_REFUSED
        out["would_refuse"] = True
        print(printable(f"placeflow: a run would be refused: {seen.refusal}"), file=sys.stderr)
    status = {EXIT_OK: "estimated", EXIT_REFUSED: "refused"}.get(code, "rejected")
    if args.json:
        out["held_failing"] = seen.stages["fresh"].held_failing
        out["inputs"] = inputs
        out["message"] = seen.refusal
        print_json(result(out, code=code, status=status))
    else:
        print(f"estimate against {out['target']} (nothing sent, nothing spent):")
        for name, value in out.items():
            if name not in ("target", "max_credits", "would_refuse"):
                print(
                    f"  {name.replace('_', ' '):<20} {value:,}"
                    if isinstance(value, int)
                    else f"  {name.replace('_', ' '):<20} {value}"
                )
        print("\n".join(f"  {line}" for line in describe(inputs)))
        if options.max_credits is not None:
            verdict = "would refuse it" if out["would_refuse"] else "is within it"
            print(
                f"  --max-credits {options.max_credits:,}: a run of these options {verdict}"
                f" (it could cost {e.credits:,} credits)"
            )
    return code
