"""Before anything is sent: the first half of a run's order (see `placeflow.runner.orchestrate`),
and `preview` (what `placeflow estimate` shows).

    read ─▶ normalize ─▶ dedupe ─▶ fresh ─▶ plan

Rows are read and normalised a batch at a time into staging tables, which dedupe, fresh and plan
work on in DuckDB (`placeflow.pipeline.staging`): memory holds a batch, whatever the input's size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from placeflow.events import Event
from placeflow.options import RunOptions
from placeflow.pipeline.dedupe import dedupe_staged, keyed
from placeflow.pipeline.fresh import mark_fresh_staged
from placeflow.pipeline.known import KnownLookup, known_places
from placeflow.pipeline.normalize import NormalizeInfo, merged, normalize
from placeflow.pipeline.notamatch import not_a_match_pairs
from placeflow.pipeline.objectsource import ObjectSource, has_objects
from placeflow.pipeline.plan import Estimate, estimate, plan, refusal
from placeflow.pipeline.read import OUTPUT_SCHEMA
from placeflow.pipeline.source import FileSource, Source, stream
from placeflow.pipeline.stages import StageInfos
from placeflow.pipeline.staging import Staging
from placeflow.runner.budget import check
from placeflow.runner.steps import Stages, Step, direct, emitter
from placeflow.runner.target import Target, environment_defaults
from placeflow.state.budgets import kind_of
from placeflow.state.records import PLACES, REJECTS, Plan
from placeflow.state.runstate import Clock, utc_now
from placeflow.store.warehouse import connect
from placeflow.support.objects import Storage


def as_source(inputs: Source | Sequence[str], storage: Storage | None = None) -> Source:
    """`inputs` as a source: files, or objects in object storage (`storage` reaches them) when
    any input is an ``s3://`` URL."""
    if isinstance(inputs, Source):
        return inputs
    given = tuple(str(i) for i in inputs)
    if has_objects(given):
        return ObjectSource(given, storage or Storage())
    return FileSource(given)


SMALL_INPUT = 16 * 1024
"""Bytes of local files (a hundred rows or two) up to which a run reads and dedupes its input
with the warehouse held (`small_input`): that work takes a fraction of a second, less than the
let-go and the open again it would take otherwise (readers are kept out at most 2 s)."""


def small_input(source: Source) -> bool:
    """Whether `source` is local files of SMALL_INPUT bytes or fewer in all (False for objects
    in object storage, and for inputs not found: the read says why)."""
    if not isinstance(source, FileSource):
        return False
    total = 0
    for pattern in source.inputs:
        try:
            total += Path(pattern).stat().st_size  # a glob (no such file) is not known small
        except OSError:
            return False
        if total > SMALL_INPUT:
            return False
    return True


def fingerprint(source: Source, options: RunOptions, *asked: str) -> str:
    """The identity of a run command: its source's identity and its options (and, for a mode
    that asks more than the options say, `asked`: research's fields and sample)."""
    return hashlib.sha256(
        "\n".join([options.identity_json(), *source.identity(), *asked]).encode()
    ).hexdigest()


@dataclass(frozen=True)
class Preview:
    """What a run of these inputs would do, before anything is sent (`placeflow estimate`)."""

    rows_read: int
    rejected: int
    duplicates: int
    skipped_fresh: int
    to_send: int
    estimate: Estimate
    stages: StageInfos
    refusal: str | None = None
    """Why a run of these inputs would be refused now (its cap, the key's balance, a budget of
    the warehouse: `placeflow.runner.budget.check`); None when it would start."""


# --- before anything is sent ------------------------------------------------------------------


def prepare(
    r: Stages, source: Source, options: RunOptions, staging: Staging, now: datetime
) -> Plan:
    """read → normalize → dedupe → fresh → plan on one staging (what `preview` runs): `gather`
    then `plan_places`."""
    fuzzy = options.dedupe == "fuzzy" and staging.warehouse
    con = staging.con
    gather(
        r, source, options, staging, not_a_match=not_a_match_pairs(con) if fuzzy else None,
        known=(lambda keys: known_places(con, keys)) if fuzzy else None,
    )  # fmt: skip
    return plan_places(r, options, staging, now)


def gather(
    r: Stages,
    source: Source,
    options: RunOptions,
    staging: Staging,
    *,
    not_a_match: pl.DataFrame | None,
    known: KnownLookup | None = None,
) -> None:
    """read → normalize → dedupe into staging (DEDUPED, MATCHED and REJECTS). Rows are read
    and normalised a batch at a time and staged (each batch's places keyed: dedupe's first
    half); dedupe works on the staging tables, in DuckDB, its memory capped. It needs nothing
    of the warehouse but the pairs a person marked `not_a_match` and (`known`, fuzzy only) the
    places it already knows that share a block key with these, so a run does it in a scratch
    database with the warehouse let go but for that look-up (`placeflow.runner.orchestrate`)."""
    with staging.limited():
        read_rows = stream(source, options, options.batch_rows)  # the inputs checked here
        batches = iter(read_rows)
        r.started("read")
        r.started("normalize")
        infos: list[NormalizeInfo] = []
        while (rows := r.batch("read", _next_rows)(batches, first=not infos)) is not None:
            places, rejects, info = r.batch("normalize", normalize)(rows)
            del rows
            infos.append(info)
            staging.append(REJECTS, rejects)
            staging.append(PLACES, r.batch("dedupe", keyed)(places, keys_given=source.keys_given))
            del places, rejects
        r.done("read", read_rows.info)
        r.done("normalize", merged(infos))
        r.stage("dedupe", dedupe_staged)(
            staging, mode=options.dedupe, not_a_match=not_a_match,
            threshold=options.match_threshold, ids_may_repeat=options.ids_may_repeat_places,
            known=known,
        )  # fmt: skip


def plan_places(
    r: Stages, options: RunOptions, staging: Staging, now: datetime, *, keep_deduped: bool = False
) -> Plan:
    """fresh → plan on the deduped places (the warehouse's staging, or one the warehouse is
    attached to: fresh looks up earlier outcomes and the places other runs are buying);
    `keep_deduped`: as `mark_fresh_staged` takes it."""
    with staging.limited():
        r.stage("fresh", mark_fresh_staged)(staging, options, now=now, keep_deduped=keep_deduped)
        planned, _ = r.stage("plan", plan)(staging, options)
    return planned


def _next_rows(batches: Iterator[pl.DataFrame], *, first: bool) -> pl.DataFrame | None:
    """The next batch of read rows, None once all were read; an input with no rows at all gives
    one empty batch, so that every staging table exists."""
    rows = next(batches, None)
    return pl.DataFrame(schema=OUTPUT_SCHEMA) if rows is None and first else rows


def counts_of(r: Stages) -> dict[str, int]:
    return {
        "rows_read": r.stages["read"].rows,
        "rejected": r.stages["normalize"].rejected,
        "duplicates": r.stages["dedupe"].duplicates,
        "skipped_fresh": r.stages["fresh"].fresh,
        "to_send": r.stages["plan"].places,
    }


def preview(
    inputs: Source | Sequence[str],
    *,
    options: RunOptions | None = None,
    db: Path | str | None = None,
    target: Target | None = None,
    step: Step = direct,
    on_event: Callable[[Event], None] | None = None,
    clock: Clock = utc_now,
    storage: Storage | None = None,
) -> Preview:
    """What a run would send and the most it could cost; sends nothing, writes nothing
    (`storage`: how to reach inputs in object storage). Without a `target` or a `db`, the
    environment's, as `placeflow.run` takes them."""
    if target is None or db is None:
        with environment_defaults(target, db) as (target, db):
            return preview(inputs, options=options, db=db, target=target, step=step,
                           on_event=on_event, clock=clock, storage=storage)  # fmt: skip
    options = options or RunOptions()
    source = as_source(inputs, storage)
    now = clock()
    with target.client() as api:
        r = Stages(step=step, emit=emitter(on_event))
        if Path(db).exists():
            con = connect(db, read_only=True)
            try:
                prepare(r, source, options, Staging(con, warehouse=True), now)
                c = counts_of(r)
                cost = estimate(c["to_send"], options, api.pricing())
                usage = api.usage() if c["to_send"] else None
                kind = kind_of(options.mode, source.inputs)
                refused = check(con, cost, options, kind=kind, now=now, usage=usage)
            finally:
                con.close()
        else:
            with Staging.scratch() as staging:
                prepare(r, source, options, staging, now)
            c = counts_of(r)
            cost = estimate(c["to_send"], options, api.pricing())
            usage = api.usage() if c["to_send"] else None
            refused = refusal(cost, options, available=None if usage is None else usage.spendable)
    return Preview(**c, estimate=cost, stages=r.stages, refusal=refused)
