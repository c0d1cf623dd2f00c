"""What a run, resume or refresh leaves behind when it ends, gathered once and published by one
of two publishers: as Prefect artifacts by a flow (`placeflow.flows.artifacts.publish`), or as
files in the run's folder by a command carried out without Prefect (`write_files`).

The same things either way: the markdown summary (and, when the flow loaded the warehouse
elsewhere, what the export sent), the rejects by field and reason, the changes found, and the
HTML report written beside the warehouse (`REPORTS/RUN_ID.html`) with a link to it. The rows
come from `placeflow.reporting` (aggregated in DuckDB); nothing here imports Prefect.

Files, in the run's folder beside the warehouse (`runs/RUN_ID/`, where its result files are):

    summary.md      the markdown summary, the export's lines, links to the others
    rejects.csv     field, reason, rows: rejected rows by field and reason, most frequent first
    changes.csv     the first changes found: detected_at, place_key, place_name, field, ...
    report.url      an Internet shortcut to the HTML report (its file:// URL)
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from placeflow.pipeline.account import RunSummary
from placeflow.reporting.build import ReportInfo, write_report
from placeflow.reporting.data import Row
from placeflow.reporting.listing import changes_table, rejects_table, report_link
from placeflow.reporting.summary import markdown_summary
from placeflow.store.warehouse import MEMORY, reading
from placeflow.store.writer import workdir_for
from placeflow.support.csvsafe import csv_cell
from placeflow.support.text import printable_logger

if TYPE_CHECKING:
    from placeflow.exporters.export import ExportSummary

Exported: TypeAlias = tuple["ExportSummary | None", str | None]
"""What an export at the end of a flow gave: its summary, or its error's text."""

log = printable_logger("placeflow.run")

REPORTS = "reports"
"""The folder, beside the warehouse file, that holds the runs' HTML reports."""


def report_path(db: str, run_id: str) -> Path | None:
    """Where a run's report is written: REPORTS/RUN_ID.html beside the warehouse file (None
    for an in-memory warehouse)."""
    if db == MEMORY:
        return None
    return Path(db).expanduser().resolve().parent / REPORTS / f"{run_id}.html"


@dataclass
class Published:
    """What a publisher left, by name (an artifact's key, or a file's path), for the result."""

    keys: dict[str, str] = field(default_factory=dict)
    report: str | None = None
    export: dict[str, Any] | None = None
    export_error: str | None = None
    report_error: str | None = None


class Publisher(Protocol):
    """Publishes a summary's artifacts under names starting with `prefix`."""

    def __call__(
        self,
        summary: RunSummary,
        *,
        db: str,
        prefix: str,
        description: str,
        exported: Exported | None = None,
    ) -> Published: ...


def export_markdown(summary: ExportSummary) -> str:
    """The export's lines of the markdown summary: destination (redacted), rows per table."""
    lines = [
        "",
        f"**Export** `{summary.export_id}` to `{summary.destination}`"
        f" ({'full' if summary.full else 'incremental'}): {summary.rows:,} rows",
        "",
        "| table | rows |",
        "|---|---:|",
    ]
    lines += [
        f"| {t.table} | {t.rows:,}"
        + (f" ({t.made_safe:,} values made safe for the destination)" if t.made_safe else "")
        + " |"
        for t in summary.tables
    ]
    if summary.missing:
        lines += ["", f"Not in this warehouse: {', '.join(summary.missing)}."]
    return "\n".join(lines)


@dataclass
class Gathered:
    """Everything a publisher publishes for one summary; `tables` is False when the warehouse
    could not be read for them (`done.report_error` says why)."""

    markdown: str
    done: Published
    rejects: list[Row] = field(default_factory=list)
    changes: list[Row] = field(default_factory=list)
    report: ReportInfo | None = None
    tables: bool = False


def gather(summary: RunSummary, db: str, exported: Exported | None = None) -> Gathered:
    """The summary's markdown (with the export's lines), its rejects and changes tables, and
    its HTML report written beside the warehouse. A warehouse that cannot be read leaves the
    summary alone (the run's outcome stands)."""
    done = Published()
    markdown = markdown_summary(summary)
    if exported is not None:
        result, error = exported
        if result is not None:
            markdown += "\n" + export_markdown(result)
            done.export = result.as_dict()
        else:
            markdown += f"\n\n**Export failed**: {error}"
            done.export_error = error
    found = Gathered(markdown, done)
    if db == MEMORY:
        return found
    run_id = summary.run_id
    try:
        with reading(db) as con:
            found.rejects = rejects_table(con, run_id)
            found.changes = changes_table(con, run_id)
            out = report_path(db, run_id)
            found.report = write_report(con, run_id, out) if out is not None else None
    except Exception as exc:  # the run's outcome stands; the summary is published all the same
        done.report_error = f"{type(exc).__name__}: {exc}"
        return found
    found.tables = True
    if found.report is not None:
        done.report = str(found.report.path)
    return found


# --- the files publisher --------------------------------------------------------------------


def _csv(rows: list[Row], columns: tuple[str, ...]) -> str:
    """The rows as CSV, every cell made safe (`csv_cell`: no formula, no control or bidi
    character): a changed place's name or phone is the service's or the input's text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return out.getvalue()


REJECT_COLUMNS = ("field", "reason", "rows")
CHANGE_COLUMNS = ("detected_at", "place_key", "place_name", "field", "old_value", "new_value")


def _write(path: Path, text: str) -> None:
    """`text` into `path`, replaced whole (never half-written)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def write_files(
    summary: RunSummary,
    *,
    db: str,
    prefix: str,
    description: str,
    exported: Exported | None = None,
) -> Published:
    """The files publisher: the artifacts as files in the run's folder (module docstring),
    `keys` naming each file written. Nothing for an in-memory warehouse."""
    found = gather(summary, db, exported)
    done = found.done
    if db == MEMORY:
        return done
    folder = workdir_for(Path(db).expanduser().resolve(), summary.run_id)
    markdown = f"<!-- {prefix}: {description} -->\n{found.markdown}"
    files: dict[str, tuple[str, str]] = {}
    if found.tables:
        files["rejects"] = ("rejects.csv", _csv(found.rejects, REJECT_COLUMNS))
        files["changes"] = ("changes.csv", _csv(found.changes, CHANGE_COLUMNS))
    if found.report is not None:
        link = report_link(found.report.path, summary.run_id)["link"]
        files["report"] = ("report.url", f"[InternetShortcut]\nURL={link}\n")
        markdown += f"\nReport: [{found.report.path.name}]({link})\n"
    if found.tables:
        markdown += "\nRejects by field and reason: [rejects.csv](rejects.csv); changes found:"
        markdown += f" [changes.csv](changes.csv) ({len(found.changes):,} shown).\n"
    if done.report_error:
        markdown += f"\nNo tables or report: {done.report_error}\n"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / "summary.md", markdown)
        done.keys["summary"] = str(folder / "summary.md")
        for name, (file, text) in files.items():
            _write(folder / file, text)
            done.keys[name] = str(folder / file)
    except OSError as exc:  # a full disk: the run's outcome stands, its files are what is lost
        done.report_error = done.report_error or f"{type(exc).__name__}: {exc}"
        log.warning("placeflow: the files of %s were not all written: %s", summary.run_id, exc)
    return done


class WrittenLater:
    """The files publisher put off (`write_files`): called at a command's end, it says where
    the report will be and keeps the call; `write` writes the files, after the command printed
    its summary, so the summary does not wait on the report. What it cannot write is said on
    the log, as `write_files` says it; the run's outcome stands."""

    def __init__(self) -> None:
        self._pending: list[tuple[RunSummary, dict[str, Any]]] = []

    def __call__(
        self,
        summary: RunSummary,
        *,
        db: str,
        prefix: str,
        description: str,
        exported: Exported | None = None,
    ) -> Published:
        done = Published()
        if exported is not None:  # the export ran already: its result is the outcome's
            result, error = exported
            if result is not None:
                done.export = result.as_dict()
            else:
                done.export_error = error
        self._pending.append(
            (summary, {"db": db, "prefix": prefix, "description": description,
                       "exported": exported})
        )  # fmt: skip
        path = report_path(db, summary.run_id)
        done.report = None if path is None else str(path)
        return done

    def write(self) -> None:
        """Write what was put off (once)."""
        pending, self._pending = self._pending, []
        for summary, how in pending:
            done = write_files(summary, **how)
            if done.report is None and how["db"] != MEMORY:  # said in the summary printed
                why = done.report_error or "nothing to report"
                log.warning("placeflow: the report of %s was not written: %s", summary.run_id, why)
