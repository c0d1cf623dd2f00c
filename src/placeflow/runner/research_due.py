"""Research from the warehouse: which places are due, and a research of them that ends as the
other commands end (an `Outcome`), whoever carries it out.

The places are the warehouse's (refresh's selection, `placeflow.runner.refresh.WarehouseSource`:
every place a run sent, its stored fields as the read stage's text, the oldest answer first),
less those whose research of the same fields is younger than `max_age`
(`placeflow.pipeline.research.fresh`: the research's own freshness rule), before `limit` is
applied: a limited run takes places that are due, so the next run of a schedule goes on where
the last stopped instead of choosing the same fresh places again. `placeflow research
--from-warehouse` and the Prefect flow (`placeflow.flows.research`) both select with
`due_source`.

Nothing here imports Prefect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from placeflow.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    InputError,
    PlaceflowError,
    exit_code,
)
from placeflow.events import Event
from placeflow.options import RunOptions, parse_duration
from placeflow.pipeline.read import ReadInfo, ReadStream
from placeflow.pipeline.research.fields import FieldSpecError, build_specs
from placeflow.pipeline.research.fresh import field_shas, fresh_places
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.reporting.published import Exported, export_markdown
from placeflow.runner.ending import Outcome
from placeflow.runner.refresh import WarehouseSource
from placeflow.runner.research import ResearchOptions, read_options, research
from placeflow.runner.steps import Step, direct
from placeflow.runner.target import Target
from placeflow.store.warehouse import reading

PREFIX = "research"
"""The flow's artifact keys' prefix: research-summary, research-progress."""
OWNER_FIELDS = ("owner_person", "owner_org")
"""The owner lookup: the spec's reserved owner fields (an individual owner, else the parent
organisation), what a scheduled research buys by default."""

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class DueSource:
    """The warehouse's places whose research of `spec` is older than `max_age` (or missing), as
    a research's input (the `Source` protocol); `force` takes fresh ones too."""

    def __init__(
        self,
        db: Path | str,
        *,
        spec: ResearchSpec,
        max_age: timedelta,
        answered_older_than: timedelta = timedelta(0),
        country: str | None = None,
        limit: int | None = None,
        force: bool = False,
        clock: Clock = _utc_now,
    ) -> None:
        self.places = WarehouseSource(
            db, older_than=answered_older_than, country=country, clock=clock
        )
        self.spec = spec
        self.max_age = max_age
        self.limit = limit
        self.force = force
        self.clock = clock
        self.not_due = 0
        """Places of the last selection left out: their research is younger than `max_age`."""

    @property
    def name(self) -> str:
        return self.places.name

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.places.inputs

    @property
    def keys_given(self) -> bool:
        return self.places.keys_given

    def identity(self) -> list[str]:
        """The warehouse and the selection's terms (never the places found or the time: an
        unfinished research of the same terms is resumed, never planned again)."""
        name, terms = self.places.identity()
        due = "force" if self.force else f"{self.max_age.total_seconds():g}s"
        return [name, f"{terms}|research_older_than={due}|due_limit={self.limit}"]

    def rows(self, options: RunOptions) -> tuple[pl.DataFrame, ReadInfo]:
        frame, info = self.places.rows(options)
        before = frame.height
        if not self.force and before:
            with reading(self.places.db, wait=options.warehouse_wait) as con:
                fresh = fresh_places(
                    con,
                    frame.select(pl.col("source_id").alias("place_key")),
                    list(field_shas(self.spec).values()),
                    self.clock() - self.max_age,
                )
            frame = frame.filter(~pl.col("source_id").is_in(fresh.implode()))
        self.not_due = before - frame.height
        due = frame.height
        if self.limit is not None:
            frame = frame.head(self.limit)
        ordinal = pl.int_range(pl.len(), dtype=pl.Int64)
        frame = frame.with_columns(ordinal.alias("row_ord"), (ordinal + 1).alias("source_row"))
        warnings = list(info.warnings)
        if self.not_due:
            warnings.append(
                f"{self.not_due:,} of {before:,} places have research younger than"
                f" {_age(self.max_age)}: not due, not bought again"
            )
        if frame.height < due:
            warnings.append(
                f"{due - frame.height:,} of {due:,} places due are left for a later research"
                f" (--limit {self.limit:,})"
            )
        name = self.name
        shown = ReadInfo(
            files=info.files, rows=frame.height, columns=info.columns,
            rows_per_file={name: frame.height}, warnings=tuple(warnings),
        )  # fmt: skip
        return frame, shown

    def batches(self, options: RunOptions, batch_rows: int) -> ReadStream:
        return ReadStream.whole(*self.rows(options), batch_rows)


def _age(age: timedelta) -> str:
    days = age.total_seconds() / 86400
    return f"{days:g} days" if days >= 1 else f"{age.total_seconds():g} s"


def due_source(
    db: Path | str,
    *,
    spec: ResearchSpec,
    max_age: timedelta | str,
    answered_older_than: timedelta | str = timedelta(0),
    country: str | None = None,
    limit: int | None = None,
    force: bool = False,
    clock: Clock = _utc_now,
) -> DueSource:
    """The places of the warehouse `db` a research of `spec` buys: checked as the CLI checks
    them (`InputError`, `FieldSpecError`: exit code 2). Durations as `30d`, `12h` or `0`."""
    if limit is not None and limit < 0:
        raise FieldSpecError("--limit takes N >= 0")
    if not Path(db).exists():
        raise InputError(f"no warehouse at {db}: research from the warehouse researches its places")
    age = parse_duration(max_age) if isinstance(max_age, str) else max_age
    answered = (
        parse_duration(answered_older_than)
        if isinstance(answered_older_than, str)
        else answered_older_than
    )
    return DueSource(
        db, spec=spec, max_age=age, answered_older_than=answered, country=country, limit=limit,
        force=force, clock=clock,
    )  # fmt: skip


def research_spec(
    fields: Sequence[str] | str,
    *,
    verify_identity: bool = False,
    validate_existence: bool = False,
) -> ResearchSpec:
    """The attributes to research: field specs (`NAME[:TYPE[:A|B]]`, as `--field`) or the path
    of a YAML or JSON file of them (as `--fields`)."""
    if isinstance(fields, str):
        specs = build_specs(fields_file=fields)
    else:
        specs = build_specs(list(fields))
    return ResearchSpec(specs, verify_identity, validate_existence)


# --- research from the warehouse as a command with an end -------------------------------------

Service = Callable[[], AbstractContextManager[Target]]
Exporter = Callable[[str, str], Exported]
Publisher = Callable[[dict[str, Any], Exported | None], None]
"""Publishes a research's summary (and the export's, when one ran): artifacts, or files."""


def research_outcome(
    *,
    service: Service,
    publish: Publisher,
    exporter: Exporter | None,
    db: str,
    fields: Sequence[str] | str,
    older_than: str = "30d",
    max_credits: int | None = None,
    limit: int | None = None,
    country: str | None = None,
    verify_identity: bool = False,
    validate_existence: bool = False,
    resend_uncertain: bool = False,
    export_to: str | None = None,
    on_event: Callable[[Event], None] | None = None,
    step: Step = direct,
) -> Outcome:
    """Research the places of `db` whose research is `older_than` old (or missing), within
    `max_credits`, and end it: export a completed research to `export_to` (when asked), publish
    the summary, and say whether it ended well. Returns the result dict (the research summary
    with its exit code, or an error's message and code) and, when it did not end well, why (a
    budget refused before spending is not a success: exit code 3, its message), as an
    `Outcome`, which a flow turns into its state."""
    try:
        if max_credits is not None and max_credits < 0:
            raise FieldSpecError("max_credits takes N >= 0")
        spec = research_spec(
            fields, verify_identity=verify_identity, validate_existence=validate_existence
        )
        source = due_source(db, spec=spec, max_age=older_than, country=country, limit=limit)
        age = source.max_age.total_seconds() / 86400
        options = ResearchOptions(
            spec=spec,
            run=read_options(
                max_credits=max_credits, max_age_days=age, resend_uncertain=resend_uncertain
            ),
        )
        with service() as target:
            out = research(source, options, target=target, db=db, on_event=on_event, step=step)
    except (PlaceflowError, ValueError) as exc:  # FieldSpecError, InputError, ConfigError, ...
        code = exit_code(exc) if isinstance(exc, PlaceflowError) else EXIT_USAGE
        data = {"status": "failed", "message": str(exc), "exit_code": code or EXIT_USAGE}
        publish(data, None)
        return Outcome(data, str(exc))
    if source.not_due:
        out["not_due"] = source.not_due
    exported: Exported | None = None
    if export_to and out["exit_code"] == EXIT_OK:
        exported = exporter(db, export_to) if exporter else (None, f"no exporter for {export_to}")
        if exported[1] is not None:
            message = f"the research completed but its export failed: {exported[1]}"
            out = {**out, "exit_code": EXIT_FAILED, "message": message}
    publish(out, exported)
    if out["exit_code"] != EXIT_OK:
        return Outcome(out, str(out.get("message") or out.get("status")))
    return Outcome(out)


SHOWN = (
    "rows_read", "not_due", "skipped_fresh", "rejected", "duplicates", "submitted", "succeeded",
    "failed", "not_answered", "credits_estimated", "charged", "possible_extra_credits",
    "usage_delta", "ledger_vs_usage", "chunks", "seconds",
)  # fmt: skip
"""The figures of a research summary the markdown shows, in order."""


def research_markdown(out: dict[str, Any], exported: Exported | None = None) -> str:
    """A research's summary as markdown: its status and message, its figures, its export."""
    run_id = out.get("run_id") or "(not started)"
    head = f"# placeflow research {run_id}: {out.get('status')}"
    lines = [head, ""]
    if out.get("target"):
        lines += [f"Against {out['target']}; exit code {out.get('exit_code')}.", ""]
    if out.get("message"):
        lines += [f"**{out['message']}**", ""]
    figures = [(k, out[k]) for k in SHOWN if out.get(k) is not None]
    if figures:
        lines += ["| figure | value |", "|---|---:|"]
        lines += [
            f"| {k.replace('_', ' ')} | {f'{v:,}' if isinstance(v, int) else v} |"
            for k, v in figures
        ]
    if exported is not None:
        summary, error = exported
        if summary is not None:
            lines.append(export_markdown(summary))
        if error is not None:
            lines += ["", f"**Export failed**: {error}"]
    return "\n".join(lines)
