"""The tables an export sends: each with its key and its incremental column."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableSpec:
    name: str
    key: tuple[str, ...]
    cursor: str
    """SQL expression over the table's columns: when a row last changed (its watermark)."""


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("places_latest", ("place_key",), "outcome_at"),
        TableSpec("place_changes", ("run_id", "place_key", "field"), "detected_at"),
        TableSpec("place_history", ("place_key", "valid_from"), "coalesce(valid_to, valid_from)"),
        TableSpec("runs", ("run_id",), "coalesce(finished_at, created_at)"),
        TableSpec("credit_ledger", ("run_id", "ref", "kind"), "recorded_at"),
        TableSpec("crosswalk", ("run_id", "row_ord"), "run_opened_at"),
        TableSpec("research_latest", ("place_key", "field"), "loaded_at"),
        TableSpec("research_answers", ("run_id", "place_key", "field"), "loaded_at"),
        TableSpec("research_runs", ("run_id",), "coalesce(finished_at, created_at)"),
    )
}
"""Exportable tables: name -> key columns -> incremental column. Adding one is one line."""

DEFAULT_TABLES = (
    "places_latest",
    "place_changes",
    "place_history",
    "crosswalk",
    "research_latest",
    "research_answers",
)
"""What an export sends unless told otherwise: the places, their changes and history, each
input row's way to its place, and the research answers."""
