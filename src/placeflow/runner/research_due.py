"""Research from the warehouse: which places are due, and a research that ends as the other
commands end: through the run's `Ending` (`research_ending`), whoever carries it out.

The places are the warehouse's (refresh's selection, `placeflow.runner.refresh.WarehouseSource`:
every place a run sent, its stored fields as the read stage's text, the oldest answer first),
less those whose research of the same fields is younger than `max_age`
(`placeflow.pipeline.research.fresh`: the research's own freshness rule), before `limit` is
applied: a limited run takes places that are due, so the next run of a schedule goes on where
the last stopped instead of choosing the same fresh places again. `placeflow research
--from-warehouse` and the Prefect flow (`placeflow.flows.research`) both select with
`due_source`.

`ended_research` is `research` and its end, as `placeflow.runner.ending.run_outcome` is a
run's: the summary (the run's `RunSummary`) published, a completed research exported when
asked, a research refused or whose credits ran out (`BudgetRefused`, `CreditsRanOut`) or that
raised ended by `Ending.caught`, its exit code from `errors.EXIT_CODES`: an `Outcome`. The CLI
and the flow (`research_outcome`, the warehouse's places) both end a research with it.

Nothing here imports Prefect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from placeflow.errors import InputError, OptionsError, PlaceflowError, RunStopped
from placeflow.events import Event
from placeflow.options import RunOptions, parse_duration
from placeflow.pipeline.account import RunSummary
from placeflow.pipeline.read import ReadInfo, ReadStream
from placeflow.pipeline.research.fields import FieldSpecError, build_specs
from placeflow.pipeline.research.fresh import field_shas, fresh_places
from placeflow.pipeline.research.plan import ResearchSpec
from placeflow.pipeline.source import Source
from placeflow.reporting.published import Exported, Published, Publisher
from placeflow.runner.ending import Ending, Exporter, Outcome, Service
from placeflow.runner.refresh import WarehouseSource
from placeflow.runner.research import ResearchOptions, read_options, research
from placeflow.runner.steps import Step, direct
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


# --- research as a command with an end ---------------------------------------------------------


def _describe_research(summary: RunSummary) -> str:
    return f"placeflow research {summary.run_id}: {summary.status}"


def research_ending(publisher: Publisher, exporter: Exporter | None = None) -> Ending:
    """The ending of `placeflow research` (a run's, `placeflow.runner.ending.Ending`): its
    summary published under `research-` (a refused one too: its message is what to act on),
    a completed research exported when asked."""
    return Ending(
        publisher, prefix=PREFIX, what="research", describe=_describe_research,
        exporter=exporter, publish_refused=True,
    )  # fmt: skip


def unpublished(
    summary: RunSummary, *, db: str, prefix: str, description: str, exported: Exported | None = None
) -> Published:
    """A publisher that leaves nothing (the CLI's research prints its summary, no files)."""
    return Published()


def ended_research(
    ending: Ending,
    *,
    service: Service,
    source: Sequence[str] | Source,
    options: ResearchOptions,
    db: str,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    export_to: str | None = None,
    raised: tuple[type[PlaceflowError], ...] = (),
) -> Outcome:
    """`research` and its end, as `run_outcome` is a run's: published, exported when it
    completed (and asked), or stopped (refused, its credits ran out, an error: `Ending.caught`,
    its exit code from `errors.EXIT_CODES`). A `DueSource`'s places not due are in the
    summary's research figures (`not_due`). Errors of the classes `raised` are raised as they
    are, for a caller that says them itself (the CLI's error document names the run another
    process carries out, `RunInProgress`)."""
    began = datetime.now(UTC)
    try:
        with service() as target:
            summary = research(source, options, target=target, db=db, on_event=on_event, step=step)
    except RunStopped as exc:
        if isinstance(exc.summary, RunSummary):
            exc.summary = _not_due(exc.summary, source)
        return ending.caught(exc, db, since=began)
    except raised:
        raise
    except Exception as exc:  # a full or read-only disk: the research opened since `began`
        return ending.caught(exc, db, since=began)
    return ending.finish(_not_due(summary, source), db, export_to)


def _not_due(summary: RunSummary, source: Sequence[str] | Source) -> RunSummary:
    """The summary with the places a `DueSource` left out as not due, when it left any."""
    if not isinstance(source, DueSource) or not source.not_due or summary.research is None:
        return summary
    return replace(summary, research=replace(summary.research, not_due=source.not_due))


def research_outcome(
    ending: Ending,
    *,
    service: Service,
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
    `max_credits`, and end it (`ended_research`): an `Outcome`, which a flow turns into its
    state. Parameters the research cannot take end it before anything is sent (exit code 2)."""
    try:
        if max_credits is not None and max_credits < 0:
            raise FieldSpecError("max_credits takes N >= 0")
        spec = research_spec(
            fields, verify_identity=verify_identity, validate_existence=validate_existence
        )
        source = due_source(db, spec=spec, max_age=older_than, country=country, limit=limit)
        age = source.max_age.total_seconds() / 86400
        run = read_options(
            max_credits=max_credits, max_age_days=age, resend_uncertain=resend_uncertain
        )
        options = ResearchOptions(spec=spec, run=run)
    except (PlaceflowError, ValueError) as exc:  # FieldSpecError, InputError, OptionsError, ...
        refused = exc if isinstance(exc, PlaceflowError) else OptionsError(str(exc))
        return ending.caught(refused, db)
    return ended_research(
        ending, service=service, source=source, options=options, db=db, step=step,
        on_event=on_event, export_to=export_to,
    )  # fmt: skip
