"""The run report as one self-contained HTML page: inline style, inline SVG, no script.

Its Content-Security-Policy forbids every fetch, so the page opens the same offline.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from placeflow.reporting import answers, charts
from placeflow.reporting.data import ReportData
from placeflow.support.text import printable

CSP = "default-src 'none'; style-src 'unsafe-inline'"

STYLE = """
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 0;
       color: #263238; background: #f5f7f8; }
header { background: #263238; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px; font-size: 20px; font-weight: 600; }
header p { margin: 0; color: #cfd8dc; font-size: 13px; }
main { max-width: 1080px; margin: 0 auto; padding: 16px 32px 40px; }
section { background: #fff; border-radius: 6px; padding: 14px 20px; margin: 16px 0;
          box-shadow: 0 1px 2px rgba(0,0,0,.08); }
h2 { font-size: 16px; margin: 0 0 8px; }
h3 { font-size: 13px; margin: 14px 0 4px; color: #455a64; }
p.note { font-size: 12px; color: #607d8b; margin: 4px 0; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0; }
.tile { flex: 1 1 120px; background: #eceff1; border-radius: 4px; padding: 8px 10px; }
.tile b { display: block; font-size: 18px; }
.tile span { font-size: 11px; color: #546e7a; }
.status-completed { color: #a5d6a7; } .status-failed, .status-refused { color: #ef9a9a; }
svg.chart { display: block; width: 100%; height: auto; margin: 6px 0; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; width: 100%; }
th, td { border-bottom: 1px solid #eceff1; padding: 3px 8px; text-align: left;
         vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.message { background: #fff3e0; border-left: 4px solid #ef6c00; padding: 8px 12px;
           font-size: 13px; }
"""


def _e(value: object) -> str:
    """Text for the page: control characters and bidi overrides shown as U+FFFD (`printable`,
    as on a terminal: a server's or a file's text cannot hide or reorder what the page says),
    then HTML-escaped."""
    return html.escape(printable("" if value is None else str(value)))


def _n(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else _e(value)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], numeric: set[int]) -> str:
    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="n"' if i in numeric else ""
        return f"<{tag}{cls}>{_n(v) if i in numeric else _e(v)}</{tag}>"

    out = ["<table><thead><tr>"]
    out += [cell("th", i, h) for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _tiles(items: Sequence[tuple[str, object]]) -> str:
    cells = "".join(f'<div class="tile"><b>{_n(v)}</b><span>{_e(k)}</span></div>' for k, v in items)
    return f'<div class="tiles">{cells}</div>'


def _section(ident: str, title: str, *body: str) -> str:
    return f'<section id="{ident}"><h2>{_e(title)}</h2>{"".join(body)}</section>'


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _funnel(d: ReportData) -> str:
    r = d.run
    body = [charts.funnel(r)]
    if d.rejects:
        total = int(d.rejects[0]["total"])
        body += ["<h3>Top reasons for rejected rows</h3>", charts.reject_reasons(d.rejects, total)]
    body.append(
        _note(
            "Duplicates share a place with an earlier row and get its answer; fresh rows had an"
            " answer young enough not to be sent again. Every row's disposition is in run_rows,"
            " every reject with its raw values in rejects."
        )
    )
    return _section("funnel", "Funnel", *body)


def _outcomes(d: ReportData) -> str:
    if not d.outcomes:
        return _section("outcomes", "Outcomes", _note("No outcomes were loaded for this run."))
    countries = d.countries
    title = "Operational status" + (" by country" if len(countries) > 1 else "")
    body = [f"<h3>{_e(title)}</h3>", charts.status_mix(d.outcomes, countries)]
    if d.confidence:
        body += ["<h3>Existence confidence</h3>", charts.confidence(d.confidence)]
    if d.verdicts:
        body += [
            "<h3>Verdicts: the answer, closure reasons, attribute confidence</h3>",
            charts.verdicts(d.verdicts),
        ]
    return _section("outcomes", "Outcomes", *body)


def _answers(d: ReportData) -> str:
    if not d.answers:
        return _section("answers", "Answers", _note("No answers were loaded for this run."))
    fields = answers.fields_of(d.answers)
    return _section(
        "answers",
        f"Answers ({len(fields)} field{'s' if len(fields) != 1 else ''})",
        "<h3>By field status</h3>",
        answers.answer_mix(d.answers, "status"),
        "<h3>By confidence</h3>",
        answers.answer_mix(d.answers, "confidence"),
        _note(
            "One answer per place per field (research_answers): confirmed, estimated and"
            " unconfirmed answers are billed; an errored row, a rejected field and a capped one"
            " are not. Estimated answers always have low confidence."
        ),
    )


def _credits(d: ReportData) -> str:
    r = d.run
    body = [charts.credits(r)]
    gap = r.get("ledger_vs_usage")
    if gap:
        body.append(
            f'<p class="message">The service counted {gap:+,} credits more than the'
            " ledger charged.</p>"
        )
    if d.jobs:
        body.append("<h3>Per request</h3>" if d.research else "<h3>Per chunk</h3>")
        if len(d.jobs) > 1:
            body.append(charts.credits_per_job(d.jobs))
        head: tuple[str, ...]
        keys: tuple[str, ...]
        if d.research:  # requests: no holds, no releases; what each may have been billed
            head = ("request", "state", "places", "charged", "possibly charged")
            keys = ("chunk_no", "status", "rows", "charged", "possible")
        else:
            head = ("chunk", "route", "status", "places", "held", "charged", "released")
            keys = ("chunk_no", "route", "status", "rows", "held", "charged", "released")
        rows = [tuple(j[k] for k in keys) for j in d.jobs[:50]]
        numeric = {i for i, k in enumerate(keys) if k not in ("route", "status")}
        body.append(_table(head, rows, numeric))
        if len(d.jobs) > 50 or int(r["chunks"] or 0) > len(d.jobs):
            body.append(_note(f"First {min(len(d.jobs), 50)} of {r['chunks']:,} chunks listed."))
    return _section("credits", "Credits", *body)


def _timeline(d: ReportData) -> str:
    if not d.jobs:
        return _section("timeline", "Timeline", _note("The run sent no chunk."))
    body = [charts.timeline(d.jobs)]
    if int(d.run["chunks"] or 0) > len(d.jobs):
        body.append(_note(f"The first {len(d.jobs):,} of {d.run['chunks']:,} chunks."))
    body.append(
        _note(
            "Each chunk from being planned to sent (the key's rate limits and the service's"
            " running-jobs limit pace this), on the service until it reported the chunk finished,"
            " then fetched, verified and loaded."
        )
    )
    return _section("timeline", "Timeline", *body)


def _changes(d: ReportData) -> str:
    total = sum(int(c["changes"]) for c in d.changes)
    rows = [
        (
            c["detected_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            c["place_name"] or c["place_key"],
            c["field"],
            c["old_value"],
            c["new_value"],
        )
        for c in d.first_changes
    ]
    return _section(
        "changes",
        f"Changes since the last answer ({total:,})",
        charts.changes(d.changes),
        f"<h3>The first {len(rows)}</h3>",
        _table(("detected (UTC)", "place", "field", "was", "now"), rows, set()),
    )


def _map(d: ReportData) -> str:
    shown = len(d.points)
    note = (
        f"All {shown:,} places with coordinates."
        if shown == d.located
        else f"A sample of {shown:,} of the {d.located:,} places with coordinates."
    )
    return _section("map", "Map", charts.place_map(d.points), _note(note))


def _header(d: ReportData) -> str:
    r = d.run
    inputs = ", ".join(json.loads(r["inputs"])) if r["inputs"] else "the warehouse"
    created = r["created_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    status = _e(r["status"])
    return (
        f"<header><h1>placeflow run {_e(r['run_id'])}: "
        f'<span class="status-{status}">{status}</span></h1>'
        f"<p>{_e(r['mode'])} of {_e(inputs)} against the {_e(r['target'])};"
        f" opened {created}</p></header>"
    )


def render(d: ReportData, *, generated: datetime | None = None) -> str:
    """The whole page for one run."""
    r = d.run
    generated = generated or datetime.now(UTC)
    tiles = _tiles(
        [
            ("rows read", r["rows_read"]),
            ("places sent", r["submitted"]),
            ("succeeded", r["succeeded"]),
            ("failed", r["failed"]),
            ("credits charged", r["charged"]),
            ("requests" if d.research else "chunks", r["chunks"]),
            ("seconds", r["seconds"]),
        ]
    )
    parts = [_section("summary", "Summary", tiles)]
    if r["message"]:
        parts.append(f'<p class="message">{_e(r["message"])}</p>')
    parts += [_funnel(d), _answers(d) if d.research else _outcomes(d), _credits(d), _timeline(d)]
    if d.changes:
        parts.append(_changes(d))
    if d.points:
        parts.append(_map(d))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>placeflow run {_e(r['run_id'])}</title><style>{STYLE}</style></head><body>"
        f"{_header(d)}<main>{''.join(parts)}"
        f"{_note('Generated by placeflow on ' + generated.strftime('%Y-%m-%d %H:%M UTC') + '.')}"
        "</main></body></html>\n"
    )
