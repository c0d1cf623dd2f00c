"""The report's charts: matplotlib figures saved as static SVG (no script, no font files).

Each function takes aggregates from `data.collect` and returns one ``<svg>`` element as text.
Text stays text (``svg.fonttype: none``), ids are salted per chart so several charts can
share one HTML page, and nothing in the SVG refers outside it. Margins are fixed (in inches,
the left one sized from the longest label) rather than computed by a layout engine, which
would draw every figure twice: a report draws each figure once.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from placeflow.reporting.data import Row

if TYPE_CHECKING:  # matplotlib loads with the first chart drawn, not with placeflow.reporting
    from matplotlib.figure import Figure

STATUS_COLOURS = {
    "open": "#2e7d32",
    "temporarily closed": "#f9a825",
    "closed": "#c62828",
    "not_exists": "#4e342e",
    "unknown": "#90a4ae",
    "no status": "#cfd8dc",
    "failed": "#6a1b9a",
    "not answered": "#000000",
}
VERDICT_COLOURS = {
    "answered": "#2e7d32",
    "high": "#1b5e20",
    "medium": "#66bb6a",
    "low": "#c5e1a5",
    "not found": "#e0e0e0",
}
ACCENT = "#1565c0"
MUTED = "#90a4ae"
_OTHER = ["#8d6e63", "#5c6bc0", "#26a69a", "#ef6c00", "#ab47bc", "#78909c", "#d4e157"]

_RC: dict[Any, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
}
_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)
WIDTH = 10.5
"""Figure width in inches: drawn at about its own size in the page's 1,040-pixel column."""
CHAR = 0.075
"""Inches per character of a 9-point tick label (DejaVu Sans, a little generous)."""
BOTTOM = 0.5
"""Room under the axes for tick labels and an axis label, in inches."""
LEGEND = 0.35
"""Room above the axes for one row of legend, in inches."""


def label_room(labels: Sequence[str], *, axis_label: bool = False) -> float:
    """Inches left of the axes for these tick labels (and a rotated axis label)."""
    longest = max((len(label) for label in labels), default=1)
    return 0.2 + CHAR * longest + (0.25 if axis_label else 0.0)


@contextmanager
def _chart(
    name: str,
    width: float,
    height: float,
    *,
    left: float = 0.8,
    right: float = 0.3,
    top: float = 0.15,
    bottom: float = BOTTOM,
) -> Iterator[tuple[Figure, list[str]]]:
    """A figure for one chart, `height` inches of axes plus the margins (inches) around them;
    its SVG text is appended to the yielded list on exit."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    out: list[str] = []
    with mpl.rc_context({**_RC, "svg.hashsalt": f"placeflow-{name}"}):
        full = height + top + bottom
        fig = Figure(figsize=(width, full))
        fig.subplots_adjust(
            left=left / width, right=1 - right / width, top=1 - top / full, bottom=bottom / full
        )
        yield fig, out
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = _PROLOGUE.sub("", buf.getvalue(), count=1)
    out.append(svg.replace("<svg ", f'<svg class="chart" data-chart="{name}" ', 1))


def _integer_ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _svg(parts: list[str]) -> str:
    return parts[0]


def _ranked_bars(
    ax: Any, names: Sequence[str], values: Sequence[float], colour: Any, xlabel: str
) -> None:
    """Horizontal bars top down in the order given, each labelled with its value, with room
    right of the longest for its label."""
    bars = ax.barh(names, values, color=colour)
    ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max([*values, 1]) * 1.15)
    ax.set_xlabel(xlabel)


def funnel(run: Row) -> str:
    """Rows read down to succeeded and failed places, as horizontal bars."""
    steps = [
        ("rows read", run["rows_read"], MUTED),
        ("rejected", run["rejected"], "#c62828"),
        ("duplicates", run["duplicates"], "#8d6e63"),
        ("skipped as fresh", run["skipped_fresh"], "#5c6bc0"),
        ("places sent", run["submitted"], ACCENT),
        ("succeeded", run["succeeded"], "#2e7d32"),
        ("failed", run["failed"], "#6a1b9a"),
    ]
    names = [s[0] for s in steps]
    with _chart("funnel", WIDTH, 1.9, left=label_room(names), top=0.35) as (fig, out):
        ax = fig.subplots()
        values = [int(v or 0) for _, v, _ in steps]
        _ranked_bars(
            ax, names, values, [s[2] for s in steps],
            "rows (read, rejected, duplicates, fresh) and places (sent and after)",
        )  # fmt: skip
        ax.set_title("What happened to every row")
    return _svg(out)


def reject_reasons(rejects: list[Row], total: int) -> str:
    """The most frequent reject reasons (field: reason), the rest summed."""
    labels = [f"{r['field']}: {r['reason']}" for r in rejects]
    labels = [label if len(label) <= 70 else label[:67] + "..." for label in labels]
    values = [int(r["rows"]) for r in rejects]
    other = total - sum(values)
    if other > 0:
        labels.append("other reasons")
        values.append(other)
    with _chart("rejects", WIDTH, 0.1 + 0.28 * len(values), left=label_room(labels)) as (
        fig,
        out,
    ):
        ax = fig.subplots()
        _ranked_bars(ax, labels, values, "#c62828", "rejected rows")
    return _svg(out)


def _colour(status: str, i: int) -> str:
    return STATUS_COLOURS.get(status, _OTHER[i % len(_OTHER)])


def status_mix(outcomes: list[Row], countries: list[str], *, most: int = 12) -> str:
    """Operational status of the run's places, one stacked bar per country when several."""
    shown = countries[:most]
    statuses = sorted(
        {r["status"] for r in outcomes},
        key=lambda s: (list(STATUS_COLOURS).index(s) if s in STATUS_COLOURS else 99, s),
    )
    counts = {(r["country"], r["status"]): int(r["places"]) for r in outcomes}
    rest = [c for c in countries if c not in shown]
    blank = "all places" if len(shown) == 1 else "no country"
    rows = [c or blank for c in shown] + (["other countries"] if rest else [])
    legend_rows = -(-len(statuses) // 7)
    with _chart(
        "status", WIDTH, 0.1 + 0.3 * len(rows), left=label_room(rows), top=LEGEND * legend_rows
    ) as (fig, out):
        ax = fig.subplots()
        left = [0] * len(rows)
        for i, status in enumerate(statuses):
            values = [counts.get((c, status), 0) for c in shown]
            if rest:
                values.append(sum(counts.get((c, status), 0) for c in rest))
            ax.barh(rows, values, left=left, color=_colour(status, i), label=status)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.invert_yaxis()
        ax.set_xlabel("places")
        ax.legend(
            ncols=min(len(statuses), 7),
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            frameon=False,
            fontsize=8,
        )
    return _svg(out)


def confidence(bins: list[Row]) -> str:
    """Histogram of existence confidence in bins of 0.05."""
    counts = {int(r["bin"]): int(r["places"]) for r in bins}
    top = max(counts.values(), default=0)
    with _chart("confidence", WIDTH, 1.7, left=label_room([f"{top:,}"], axis_label=True)) as (
        fig,
        out,
    ):
        ax = fig.subplots()
        ax.bar(
            [b / 20 for b in range(20)],
            [counts.get(b, 0) for b in range(20)],
            width=0.05,
            align="edge",
            color=ACCENT,
            edgecolor="white",
            linewidth=0.5,
        )
        ax.set_xlim(0, 1)
        ax.set_xlabel("existence confidence")
        ax.set_ylabel("places")
    return _svg(out)


def verdicts(rows: list[Row]) -> str:
    """Each subject's verdicts as one bar of shares (answer, closure reason, attributes)."""
    subjects: dict[str, dict[str, int]] = {}
    for r in rows:
        subjects.setdefault(r["subject"], {})[r["verdict"]] = int(r["places"])
    order = sorted(subjects, key=lambda s: (s != "answer", s != "closure reason", s))
    names = sorted(
        {v for vs in subjects.values() for v in vs},
        key=lambda v: (list(VERDICT_COLOURS).index(v) if v in VERDICT_COLOURS else 99, v),
    )
    legend_rows = -(-len(names) // 4)
    with _chart(
        "verdicts",
        WIDTH,
        0.1 + 0.32 * len(order),
        left=label_room(order),
        top=0.3 * legend_rows + 0.05,
    ) as (fig, out):
        ax = fig.subplots()
        left = [0.0] * len(order)
        for i, name in enumerate(names):
            shares = []
            for s in order:
                total = sum(subjects[s].values()) or 1
                shares.append(100.0 * subjects[s].get(name, 0) / total)
            ax.barh(
                order,
                shares,
                left=left,
                label=name,
                color=VERDICT_COLOURS.get(name, _OTHER[i % len(_OTHER)]),
            )
            left = [a + b for a, b in zip(left, shares, strict=True)]
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of the subject's places")
        ax.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=7)
    return _svg(out)


def credits(run: Row) -> str:
    """Estimated, held, charged and released credits beside the service's usage delta."""
    steps = [
        ("estimated", run["estimated"], MUTED),
        ("held", run["held"], "#5c6bc0"),
        ("charged", run["charged"], ACCENT),
        ("released", run["released"], "#26a69a"),
        ("usage delta (service)", run["usage_delta"], "#ef6c00"),
    ]
    shown = [(n, int(v), c) for n, v, c in steps if v is not None]
    names, values, colours = (
        [n for n, _, _ in shown],
        [v for _, v, _ in shown],
        [c for _, _, c in shown],
    )
    with _chart("credits", WIDTH, 1.4, left=label_room(names)) as (fig, out):
        _ranked_bars(fig.subplots(), names, values, colours, "credits")
    return _svg(out)


def credits_per_job(jobs: list[Row]) -> str:
    """Per chunk: credits charged and released (together the hold)."""
    chunks = [int(j["chunk_no"]) for j in jobs]
    charged = [int(j["charged"]) for j in jobs]
    released = [int(j["released"]) for j in jobs]
    most = max((c + r for c, r in zip(charged, released, strict=True)), default=0)
    with _chart("job-credits", WIDTH, 1.7, left=label_room([f"{most:,}"], axis_label=True)) as (
        fig,
        out,
    ):
        ax = fig.subplots()
        ax.bar(chunks, charged, color=ACCENT, label="charged", width=0.8)
        ax.bar(chunks, released, bottom=charged, color="#26a69a", label="released", width=0.8)
        ax.xaxis.set_major_locator(_integer_ticks())
        ax.set_xlabel("chunk")
        ax.set_ylabel("credits")
        ax.legend(frameon=False, fontsize=8)
    return _svg(out)


def timeline(jobs: list[Row]) -> str:
    """A Gantt strip: each chunk waiting to be sent, on the service, then fetched and loaded."""
    phases = [
        ("planned_s", "submitted_s", "waiting to be sent", "#cfd8dc"),
        ("submitted_s", "finished_s", "on the service", ACCENT),
        ("finished_s", "loaded_s", "fetched and loaded", "#2e7d32"),
    ]
    height = min(0.6 + 0.2 * len(jobs), 8.2)
    last = max((int(j["chunk_no"]) for j in jobs), default=0)
    with _chart(
        "timeline", WIDTH, height, left=label_room([str(last)], axis_label=True), top=LEGEND
    ) as (fig, out):
        ax = fig.subplots()
        for label_, (start, end, label, colour) in enumerate(phases):
            spans = [
                (float(j[start]), float(j[end]) - float(j[start]), int(j["chunk_no"]))
                for j in jobs
                if j[start] is not None and j[end] is not None
            ]
            ax.barh(
                [s[2] for s in spans],
                [s[1] for s in spans],
                left=[s[0] for s in spans],
                color=colour,
                label=label,
                height=0.7,
                zorder=label_ + 2,
            )
        numbers = [int(j["chunk_no"]) for j in jobs]
        if len(numbers) <= 20:
            ax.set_yticks(numbers)
        else:
            ax.yaxis.set_major_locator(_integer_ticks())
        ax.set_ylim(max(numbers) + 0.6, min(numbers) - 0.6)
        ax.set_xlabel("seconds since the run opened")
        ax.set_ylabel("chunk")
        ax.legend(ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=8)
    return _svg(out)


def changes(rows: list[Row]) -> str:
    """Detected changes by kind."""
    kinds = [r["kind"] for r in rows]
    values = [int(r["changes"]) for r in rows]
    with _chart("changes", WIDTH, 0.1 + 0.3 * len(kinds), left=label_room(kinds)) as (fig, out):
        ax = fig.subplots()
        _ranked_bars(ax, kinds, values, "#ef6c00", "changes")
    return _svg(out)


def place_map(points: list[Row]) -> str:
    """The places' coordinates as a scatter, coloured by status (no tiles, no basemap)."""
    by_status: dict[str, list[Row]] = {}
    for p in points:
        by_status.setdefault(p["status"], []).append(p)
    labels = [f"{status} ({len(pts):,})" for status, pts in by_status.items()]
    right = 0.4 + 0.065 * max((len(label) for label in labels), default=1)
    with _chart("map", WIDTH, 4.8, left=label_room(["-180"], axis_label=True), right=right) as (
        fig,
        out,
    ):
        ax = fig.subplots()
        for i, (status, pts) in enumerate(sorted(by_status.items())):
            ax.scatter(
                [p["longitude"] for p in pts],
                [p["latitude"] for p in pts],
                s=10,
                color=_colour(status, i),
                label=f"{status} ({len(pts):,})",
                linewidths=0,
                alpha=0.8,
            )
        ax.set_xlabel("longitude")
        ax.set_ylabel("latitude")
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(True, color="#eceff1", linewidth=0.5)
        ax.legend(
            fontsize=7, markerscale=2, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5)
        )
    return _svg(out)
