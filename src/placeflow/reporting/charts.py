"""The report's charts, each one static ``<svg>`` element as text (no script, no font files).

Each function takes aggregates from `data.collect` and draws them with the small plotter in
`placeflow.reporting.svg`: text stays text, nothing refers outside the element, and the same
aggregates give the same bytes. Margins are fixed in inches, the left one sized from the
longest label.
"""

from __future__ import annotations

from collections.abc import Sequence

from placeflow.reporting.data import Row
from placeflow.reporting.svg import Chart, nice_ticks

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


def _chart(
    name: str,
    height: float,
    *,
    left: float = 0.8,
    right: float = 0.3,
    top: float = 0.15,
    bottom: float = BOTTOM,
) -> Chart:
    """A chart `WIDTH` inches wide: `height` inches of axes plus the margins (inches)."""
    return Chart(name, WIDTH, height, left=left, right=right, top=top, bottom=bottom)


def _upto(most: float) -> float:
    """The top of a value axis: the largest value plus 5 % (1 when all are 0)."""
    return most * 1.05 if most > 0 else 1.0


def _categories(c: Chart, names: Sequence[str]) -> None:
    """Category labels down the y axis, the first on top (`ylim` set for them)."""
    c.ylim = (len(names) - 0.5, -0.5)
    c.yaxis(list(range(len(names))), "", list(names))


def _ranked_bars(
    c: Chart, names: Sequence[str], values: Sequence[float], colours: Sequence[str], xlabel: str
) -> None:
    """Horizontal bars top down in the order given, each labelled with its value, with room
    right of the longest for its label."""
    c.xlim = (0.0, max([*values, 1]) * 1.15)
    _categories(c, names)
    for i, (v, colour) in enumerate(zip(values, colours, strict=True)):
        c.hbar(i, 0.8, 0.0, v, colour)
        c.text(c.x(v) + 3, c.y(i), f"{v:,.0f}", size=8)
    c.xaxis(nice_ticks(*c.xlim, integer=True), xlabel)
    c.spines()


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
    c = _chart("funnel", 1.9, left=label_room(names), top=0.35)
    _ranked_bars(
        c, names, [int(v or 0) for _, v, _ in steps], [s[2] for s in steps],
        "rows (read, rejected, duplicates, fresh) and places (sent and after)",
    )  # fmt: skip
    c.title("What happened to every row")
    return c.svg()


def reject_reasons(rejects: list[Row], total: int) -> str:
    """The most frequent reject reasons (field: reason), the rest summed."""
    labels = [f"{r['field']}: {r['reason']}" for r in rejects]
    labels = [label if len(label) <= 70 else label[:67] + "..." for label in labels]
    values = [int(r["rows"]) for r in rejects]
    other = total - sum(values)
    if other > 0:
        labels.append("other reasons")
        values.append(other)
    c = _chart("rejects", 0.1 + 0.28 * len(values), left=label_room(labels))
    _ranked_bars(c, labels, values, ["#c62828"] * len(values), "rejected rows")
    return c.svg()


def _colour(status: str, i: int) -> str:
    return STATUS_COLOURS.get(status, _OTHER[i % len(_OTHER)])


def _stacked(c: Chart, rows: Sequence[str], layers: Sequence[tuple[str, str, list[float]]]) -> None:
    """Bars of `rows` (top down), each the sum of the layers' values left to right."""
    _categories(c, rows)
    left = [0.0] * len(rows)
    for _, colour, values in layers:
        for i, v in enumerate(values):
            if v:
                c.hbar(i, 0.8, left[i], left[i] + v, colour)
        left = [a + b for a, b in zip(left, values, strict=True)]


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
    layers = []
    for i, status in enumerate(statuses):
        values = [float(counts.get((c, status), 0)) for c in shown]
        if rest:
            values.append(float(sum(counts.get((c, status), 0) for c in rest)))
        layers.append((status, _colour(status, i), values))
    return stacked_bars("status", rows, layers, "places")


def stacked_bars(
    name: str, rows: Sequence[str], layers: Sequence[tuple[str, str, list[float]]], xlabel: str
) -> str:
    """One horizontal bar per row (top down), each the sum of the layers' (label, colour,
    values) left to right, the layers' legend above in rows of 7."""
    legend_rows = -(-len(layers) // 7)
    c = _chart(
        name, 0.1 + 0.3 * max(len(rows), 1), left=label_room(rows),
        top=LEGEND * legend_rows + 0.05,
    )  # fmt: skip
    totals = [sum(v[i] for _, _, v in layers) for i in range(len(rows))]
    c.xlim = (0.0, _upto(max(totals, default=0)))
    _stacked(c, rows, layers)
    c.xaxis(nice_ticks(*c.xlim, integer=True), xlabel)
    c.spines()
    c.legend_above([(n, colour) for n, colour, _ in layers], 7)
    return c.svg()


def confidence(bins: list[Row]) -> str:
    """Histogram of existence confidence in bins of 0.05."""
    counts = {int(r["bin"]): int(r["places"]) for r in bins}
    top = max(counts.values(), default=0)
    c = _chart("confidence", 1.7, left=label_room([f"{top:,}"], axis_label=True))
    c.xlim, c.ylim = (0.0, 1.0), (0.0, _upto(top))
    for b in range(20):
        if counts.get(b, 0):
            c.vbar(b / 20, 0.05, 0, counts[b], ACCENT, ' stroke="#fff" stroke-width="0.5"')
    c.xaxis(nice_ticks(0.0, 1.0, most=6), "existence confidence")
    c.yaxis(nice_ticks(*c.ylim, most=5, integer=True), "places")
    c.spines()
    return c.svg()


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
    layers = []
    for i, name in enumerate(names):
        shares = [
            100.0 * subjects[s].get(name, 0) / (sum(subjects[s].values()) or 1) for s in order
        ]
        layers.append((name, VERDICT_COLOURS.get(name, _OTHER[i % len(_OTHER)]), shares))
    c = _chart(
        "verdicts", 0.1 + 0.32 * len(order), left=label_room(order), top=0.2 * legend_rows + 0.1
    )
    c.xlim = (0.0, 100.0)
    _stacked(c, order, layers)
    c.xaxis(nice_ticks(0.0, 100.0, most=6), "% of the subject's places")
    c.spines()
    c.legend_above([(n, colour) for n, colour, _ in layers], 4, size=7)
    return c.svg()


def credits(run: Row) -> str:
    """Estimated, held, charged and released credits beside the service's usage delta."""
    steps = [
        ("estimated", run["estimated"], MUTED),
        ("held", run["held"], "#5c6bc0"),
        ("charged", run["charged"], ACCENT),
        ("released", run["released"], "#26a69a"),
        ("usage delta (service)", run["usage_delta"], "#ef6c00"),
    ]
    shown = [(n, int(v), colour) for n, v, colour in steps if v is not None]
    names = [n for n, _, _ in shown]
    c = _chart("credits", 1.4, left=label_room(names))
    _ranked_bars(c, names, [v for _, v, _ in shown], [k for _, _, k in shown], "credits")
    return c.svg()


def _chunk_ticks(numbers: Sequence[int]) -> list[float]:
    """Every chunk number when there are few, else round ones."""
    if len(numbers) <= 20:
        return [float(n) for n in numbers]
    return nice_ticks(min(numbers), max(numbers), most=10, integer=True)


def credits_per_job(jobs: list[Row]) -> str:
    """Per chunk: credits charged and released (together the hold)."""
    chunks = [int(j["chunk_no"]) for j in jobs]
    charged = [int(j["charged"]) for j in jobs]
    released = [int(j["released"]) for j in jobs]
    most = max((a + b for a, b in zip(charged, released, strict=True)), default=0)
    c = _chart("job-credits", 1.7, left=label_room([f"{most:,}"], axis_label=True), top=0.35)
    c.xlim = (min(chunks, default=0) - 0.6, max(chunks, default=0) + 0.6)
    c.ylim = (0.0, _upto(most))
    for n, a, b in zip(chunks, charged, released, strict=True):
        c.vbar(n - 0.4, 0.8, 0, a, ACCENT)
        c.vbar(n - 0.4, 0.8, a, a + b, "#26a69a")
    c.xaxis(_chunk_ticks(chunks), "chunk")
    c.yaxis(nice_ticks(*c.ylim, most=5, integer=True), "credits")
    c.spines()
    c.legend_above([("charged", ACCENT), ("released", "#26a69a")], 2)
    return c.svg()


def timeline(jobs: list[Row]) -> str:
    """A Gantt strip: each chunk waiting to be sent, on the service, then fetched and loaded."""
    phases = [
        ("planned_s", "submitted_s", "waiting to be sent", "#cfd8dc"),
        ("submitted_s", "finished_s", "on the service", ACCENT),
        ("finished_s", "loaded_s", "fetched and loaded", "#2e7d32"),
    ]
    height = min(0.6 + 0.2 * len(jobs), 8.2)
    numbers = [int(j["chunk_no"]) for j in jobs]
    c = _chart(
        "timeline", height, left=label_room([str(max(numbers, default=0))], axis_label=True),
        top=LEGEND,
    )  # fmt: skip
    ends = [float(j[k]) for j in jobs for k in ("planned_s", "loaded_s") if j[k] is not None]
    c.xlim = (min([0.0, *ends]), _upto(max(ends, default=0.0)))
    c.ylim = (max(numbers, default=0) + 0.6, min(numbers, default=0) - 0.6)
    for start, end, _, colour in phases:
        for j in jobs:
            if j[start] is not None and j[end] is not None:
                c.hbar(int(j["chunk_no"]), 0.7, float(j[start]), float(j[end]), colour)
    c.xaxis(nice_ticks(*c.xlim), "seconds since the run opened")
    c.yaxis(_chunk_ticks(numbers), "chunk")
    c.spines()
    c.legend_above([(label, colour) for _, _, label, colour in phases], 3)
    return c.svg()


def changes(rows: list[Row]) -> str:
    """Detected changes by kind."""
    kinds = [str(r["kind"]) for r in rows]
    values = [int(r["changes"]) for r in rows]
    c = _chart("changes", 0.1 + 0.3 * len(kinds), left=label_room(kinds))
    _ranked_bars(c, kinds, values, ["#ef6c00"] * len(values), "changes")
    return c.svg()


def _span(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values, default=0.0), max(values, default=0.0)
    pad = (hi - lo) * 0.05 or 1.0
    return lo - pad, hi + pad


def place_map(points: list[Row]) -> str:
    """The places' coordinates as a scatter, coloured by status (no tiles, no basemap), one
    degree of longitude as long as one of latitude."""
    by_status: dict[str, list[Row]] = {}
    for p in points:
        by_status.setdefault(p["status"], []).append(p)
    labels = [f"{status} ({len(pts):,})" for status, pts in by_status.items()]
    right = 0.4 + 0.065 * max((len(label) for label in labels), default=1)
    c = _chart("map", 4.8, left=label_room(["-180"], axis_label=True), right=right)
    (x0, x1), (y0, y1) = (
        _span([float(p["longitude"]) for p in points]),
        _span([float(p["latitude"]) for p in points]),
    )
    per_degree = min((c.x1 - c.x0) / (x1 - x0), (c.y1 - c.y0) / (y1 - y0))
    wide, high = (c.x1 - c.x0) / per_degree, (c.y1 - c.y0) / per_degree  # degrees shown
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    c.xlim, c.ylim = (mid_x - wide / 2, mid_x + wide / 2), (mid_y - high / 2, mid_y + high / 2)
    xs, ys = nice_ticks(*c.xlim, most=9), nice_ticks(*c.ylim, most=6)
    c.grid(xs, ys)
    legend = []
    for i, (status, pts) in enumerate(sorted(by_status.items())):
        colour = _colour(status, i)
        dots = "".join(
            f'<circle cx="{c.x(float(p["longitude"])):.1f}" cy="{c.y(float(p["latitude"])):.1f}"'
            ' r="1.6"/>'
            for p in pts
        )
        c.parts.append(f'<g fill="{colour}" fill-opacity="0.8">{dots}</g>')
        legend.append((f"{status} ({len(pts):,})", colour))
    c.xaxis(xs, "longitude")
    c.yaxis(ys, "latitude")
    c.spines()
    mid = (c.y0 + c.y1) / 2 - (len(legend) - 1) * 7
    c.legend_at(c.x1 + 10, mid, legend, size=7, dots=True)
    return c.svg()
