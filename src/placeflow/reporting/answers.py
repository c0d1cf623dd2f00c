"""A research run's answers as charts: per field, its answers by field status and by confidence,
one stacked bar per field (the same plotter and layout as the run's status mix)."""

from __future__ import annotations

from placeflow.reporting.charts import stacked_bars
from placeflow.reporting.data import Row

STATUS_COLOURS = {
    "confirmed": "#2e7d32",
    "estimated": "#9ccc65",
    "unconfirmed": "#90a4ae",
    "cost_capped": "#f9a825",
    "rejected": "#c62828",
    "error": "#6a1b9a",
}
CONFIDENCE_COLOURS = {
    "high": "#1b5e20",
    "medium": "#66bb6a",
    "low": "#c5e1a5",
    "none": "#e0e0e0",
}
_OTHER = ["#8d6e63", "#5c6bc0", "#26a69a", "#ef6c00", "#ab47bc", "#78909c"]
MEASURES = {"status": STATUS_COLOURS, "confidence": CONFIDENCE_COLOURS}
"""What the answers are counted by, each with its values' colours in legend order (a value the
service sends that is not listed is drawn after them, in another colour)."""


def fields_of(answers: list[Row]) -> list[str]:
    """The fields the run researched, in name order."""
    return sorted({str(r["field"]) for r in answers})


def answer_mix(answers: list[Row], measure: str) -> str:
    """Each field's answers by `measure` (status or confidence), one stacked bar per field."""
    known = MEASURES[measure]
    rows = [r for r in answers if r["measure"] == measure]
    values = sorted(
        {str(r["value"]) for r in rows},
        key=lambda v: (list(known).index(v) if v in known else len(known), v),
    )
    fields = fields_of(rows)
    counts = {(str(r["field"]), str(r["value"])): int(r["answers"]) for r in rows}
    layers = []
    for i, value in enumerate(values):
        colour = known.get(value, _OTHER[i % len(_OTHER)])
        layers.append((value, colour, [float(counts.get((f, value), 0)) for f in fields]))
    return stacked_bars(f"answers-{measure}", fields, layers, "answers (one per place per field)")
