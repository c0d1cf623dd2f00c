"""What the read stage made of the input: which column feeds which field, per file, which
columns feed nothing, and warnings (duplicate headers, bad bytes, re-keyed places).

`input_report` gathers it from a run's stage summaries into plain values (the summary's JSON
`inputs`); `describe` words it for the text summary and `placeflow estimate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placeflow.fields import MAPPABLE


def input_report(stages: Mapping[str, Any]) -> dict[str, Any]:
    """{"files": {file: {"columns": {field: column}, "ignored": [column]}}, "warnings": [...]}
    (and "set": {field: value} when --set gave any) from the read and fresh stages' summaries;
    empty when the run read nothing (a resume)."""
    read = stages.get("read")
    if read is None or not hasattr(read, "columns"):
        return {}
    files = {
        name: {
            "columns": {f: chosen[f] for f in MAPPABLE if f in chosen},
            "ignored": list(getattr(read, "ignored", {}).get(name, ())),
        }
        for name, chosen in read.columns.items()
    }
    warnings = list(getattr(read, "warnings", ()))
    fresh = stages.get("fresh")
    warnings += list(getattr(fresh, "warnings", ()))
    report = {"files": files, "warnings": warnings}
    constants = dict(getattr(read, "constants", {}))
    return {**report, "set": constants} if constants else report


def describe(report: Mapping[str, Any]) -> list[str]:
    """Lines for people: per file `field <- column`, the ignored columns, then warnings."""
    lines: list[str] = []
    fixed = report.get("set", {})
    if fixed:  # --set: one value for every row (of one file, for FILE:field)
        lines.append("set: " + ", ".join(f"{field} = {value!r}" for field, value in fixed.items()))
    for name, seen in report.get("files", {}).items():
        fed = ", ".join(f"{field} <- {column!r}" for field, column in seen["columns"].items())
        lines.append(f"{name}: {fed or 'no columns used'}")
        if seen["ignored"]:
            lines.append(f"  ignored: {', '.join(repr(c) for c in seen['ignored'])}")
    lines += [f"warning: {w}" for w in report.get("warnings", [])]
    return lines
