"""A run summary for people (text, markdown) and for machines (JSON)."""

from __future__ import annotations

import json

from placeflow.errors import (
    EXIT_ALL_REJECTED,
    EXIT_DOUBLE_CHARGED,
    EXIT_FAILED,
    EXIT_LEFT_TO_OTHER_RUN,
    EXIT_OK,
    EXIT_REFUSED,
)
from placeflow.pipeline.account import RunSummary
from placeflow.pipeline.mapping_report import describe
from placeflow.support.text import printable


def exit_code_for(status: str) -> int:
    """The exit code of a run that ended without an error, by its status."""
    return {
        "completed": EXIT_OK,
        "refused": EXIT_REFUSED,
        "left_to_other_run": EXIT_LEFT_TO_OTHER_RUN,
        "double_charged": EXIT_DOUBLE_CHARGED,
        "all_rejected": EXIT_ALL_REJECTED,
    }.get(status, EXIT_FAILED)


def _n(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _duplicates(s: RunSummary) -> str:
    """Duplicates, split by rule when the fuzzy pass merged any."""
    if not s.fuzzy_duplicates:
        return _n(s.duplicates)
    exact = s.duplicates - s.fuzzy_duplicates
    return f"{s.duplicates:,} (exact {exact:,}, fuzzy {s.fuzzy_duplicates:,})"


def _rejected(s: RunSummary) -> str:
    """Rejected rows, by the field that failed (the three most common), and where each row's
    reason is."""
    if not s.rejected_by_field:
        return _n(s.rejected)
    by = sorted(s.rejected_by_field.items(), key=lambda item: (-item[1], item[0]))
    # "row": the row itself could not be read (not a field, and never a row number)
    shown = ", ".join(f"{n:,} unreadable" if name == "row" else f"{n:,} by {name}"
                      for name, n in by[:3])  # fmt: skip
    shown += ", ..." if len(by) > 3 else ""
    rows = f"placeflow rows {s.run_id} --only rejected --out FILE"
    return f"{s.rejected:,} ({shown}; each row's reason: {rows})"


def against(target: str) -> str:
    """'against https://...' for a URL, 'against the embedded sandbox at ...' otherwise."""
    return f"against {target}" if "://" in target.split(" ")[0] else f"against the {target}"


def _time(s: RunSummary, wall_seconds: float | None) -> str:
    """The run's one time (from its opening, its reading included, to its end: the time
    `placeflow runs` and the report show), and beside it the command's own when it differs:
    its start-up and finish (interpreter, imports, the embedded sandbox, under Prefect its flow
    run's set-up) as a part of it; a resume's command is shorter than the run it finished."""
    run = f"{s.seconds:,.1f} s"
    if wall_seconds is None or abs(wall_seconds - s.seconds) < 0.05:
        return run
    if wall_seconds > s.seconds:
        return (
            f"{run} (the command {wall_seconds:,.1f} s, of which start-up and finish"
            f" {wall_seconds - s.seconds:,.1f} s)"
        )
    return f"{run} (this command {wall_seconds:,.1f} s)"


def summary_rows(s: RunSummary, *, wall_seconds: float | None = None) -> list[tuple[str, str]]:
    delta = _n(s.usage_delta)
    if s.ledger_vs_usage:
        delta += f" (ledger charged {s.charged:,}; difference {s.ledger_vs_usage:+,})"
    refused = s.status == "refused"
    rows = [
        ("rows read", _n(s.rows_read)),
        ("rejected", _rejected(s)),
        ("duplicates", _duplicates(s)),
        ("skipped as fresh", _n(s.skipped_fresh)),
        ("places submitted", "0 (refused: nothing sent)" if refused else _n(s.submitted)),
        ("succeeded", _n(s.succeeded)),
        ("failed", _n(s.failed)),
        ("credits estimated (at most)", _n(s.credits_estimated)),
        ("credits held", _n(s.held)),
        ("credits charged", _n(s.charged)),
        ("credits released", _n(s.released)),
        ("usage delta (service)", delta),
        ("time", _time(s, wall_seconds)),
    ]
    if s.timings:
        by = ", ".join(f"{k} {v:,.1f} s" for k, v in s.timings.items() if k != "total")
        rows.append(("time by stage", by))
    if s.claimed:
        left = sum(s.claims_left.values())
        claimed = f"{s.claimed:,} ({s.claims_answered:,} answered by it, {left:,} to come)"
        rows.insert(4, ("bought by another run (claimed)", claimed))
    if s.held_failing:
        rows.insert(4, ("held back (kept failing; --retry-failed)", _n(s.held_failing)))
    if s.not_answered and not refused:
        rows.insert(7, ("not answered (retried next run)", _n(s.not_answered)))
    if s.adjustment:
        rows.append(("ledger adjusted to the usage", f"{s.adjustment:+,} (see the message)"))
    if s.possible_extra_credits:
        rows.append(("possible extra charges", _n(s.possible_extra_credits)))
    if s.research:  # a research run's chunks are its requests
        if s.research.not_due:
            rows.insert(4, ("not due (research younger than --max-age)", _n(s.research.not_due)))
        asked = f"{s.chunks:,} ({s.research.requests_answered:,} answered"
        rows.append(("research requests", f"{asked}, {s.research.requests_open:,} open)"))
    if s.changes or s.places_changed:
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(s.changes.items()))
        rows.append(("places changed", f"{s.places_changed:,} ({kinds})"))
        if s.changed_per_credit is not None:
            rows.append(("changed per credit charged", f"{s.changed_per_credit:.4f}"))
    return rows


def _what(s: RunSummary) -> str:
    """What the summary is of: a run (of the place endpoints), or a research."""
    return "research" if s.research else "run"


def text_summary(s: RunSummary, *, wall_seconds: float | None = None) -> str:
    head = f"{_what(s)} {s.run_id}: {s.status} {against(s.target)}"
    rows = summary_rows(s, wall_seconds=wall_seconds)
    width = max(len(label) for label, _ in rows)
    lines = [head] + [f"  {label:<{width}}  {value}" for label, value in rows]
    if s.message:
        lines.append(f"  {s.message}")
    lines += [f"  warning: {line}" for line in s.budget_warnings or ()]  # placeflow budget
    lines += [f"  {line}" for line in describe(s.inputs)]  # columns used and ignored, warnings
    return printable("\n".join(lines))  # messages quote servers and file names


def markdown_summary(s: RunSummary) -> str:
    lines = [
        f"# placeflow {_what(s)} `{s.run_id}`: {s.status}",
        "",
        f"Target: {s.target}",
        "",
        "| | |",
        "|---|---:|",
    ]
    lines += [f"| {label} | {value} |" for label, value in summary_rows(s)]
    if s.message:
        lines += ["", s.message]
    warnings = [*(s.inputs or {}).get("warnings", []), *(s.budget_warnings or ())]
    if warnings:  # e.g. a budgeted refresh's stale places left for the next one
        lines += ["", "**Warnings**", "", *(f"- {w}" for w in warnings)]
    return "\n".join(lines) + "\n"


def json_summary(s: RunSummary) -> str:
    return json.dumps(s.as_dict(), sort_keys=True, default=str)
