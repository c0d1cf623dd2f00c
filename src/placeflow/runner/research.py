"""`placeflow research`: read -> normalize -> dedupe -> fresh -> plan -> budget -> send -> load ->
account, for caller-defined attributes of many places.

One place is researched once and its answers fan out to every input row with its place_key
(`run_rows`); a place with a fresh answer for every field of the same spec is skipped. Nothing
is sent before the estimate (from the rate card) is within `--max-credits` and the key's balance,
and the service's own `estimate_only` answer agrees with it. The same command resumes a run
that stopped (crash, budget, credits, unavailable research) instead of planning it again.
The input is files or any read-stage `Source` (the warehouse's places: `WarehouseSource`); the
stages report typed events (`placeflow.events`) to an `on_event` callback, as runs do. The input
rows, rejects and places, its row in `runs` and its credits in `credit_ledger` are recorded by
`placeflow.state` (their one writer); its requests and answers (research_requests,
research_answers) by this package.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from placeflow.api.client import PlaceApiClient
from placeflow.api.errors import InsufficientCredits
from placeflow.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED
from placeflow.events import Emit, Event, Note, RunStarted, StageFinished, StageStarted, ignore
from placeflow.fields import PLACE_FIELDS
from placeflow.options import RunOptions
from placeflow.pipeline.dedupe import dedupe
from placeflow.pipeline.normalize import normalize
from placeflow.pipeline.research.account import run_row, set_run, summary
from placeflow.pipeline.research.estimate import estimate_summary, first_request, refusal_of
from placeflow.pipeline.research.fields import field_signature, make_spec
from placeflow.pipeline.research.plan import READ_AS as READ_AS
from placeflow.pipeline.research.plan import (
    Estimate,
    Rates,
    ResearchSpec,
    budget_refusal,
    estimate,
    fingerprint,
    plan_requests,
    requests_of,
)
from placeflow.pipeline.research.plan import ResearchOptions as ResearchOptions
from placeflow.pipeline.research.plan import read_options as read_options
from placeflow.pipeline.research.send import Hook, SendContext, Stop, ledger_totals, send_all
from placeflow.pipeline.source import FileSource, Source
from placeflow.runner.budget import warn, within_budgets
from placeflow.runner.steps import emitter
from placeflow.state.runbook import RunBook
from placeflow.state.runstate import record_rows
from placeflow.store.warehouse import connect, insert_frame, sql_text, transaction

ROW_FIELDS = (*PLACE_FIELDS, "phone", "website")
"""A row's normalised fields, kept in run_rows as a run of files keeps them (its match-only
phone and website too): `placeflow rows` and the crosswalk show the place each row named."""


@dataclass(frozen=True)
class Prepared:
    run_rows: pl.DataFrame
    rejects: pl.DataFrame
    plan: pl.DataFrame
    rows_read: int
    estimate: Estimate


def field_shas(spec: ResearchSpec) -> dict[str, str]:
    shas = {f.name: field_signature(f, verify_identity=spec.verify_identity) for f in spec.fields}
    if spec.validate_existence:
        shas["existence"] = field_signature(
            make_spec("existence_", value_type="bool"), verify_identity=spec.verify_identity
        )
    return shas


def fresh_places(
    con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, shas: Sequence[str], cutoff: datetime
) -> pl.Series:
    con.register("research_fresh_candidates", keys.select("place_key").to_arrow())
    con.register("research_fresh_specs", pl.DataFrame({"field_sha": list(shas)}).to_arrow())
    try:
        rows = con.execute(sql_text("queries/research_fresh"), {"cutoff": cutoff}).fetchall()
    finally:
        con.unregister("research_fresh_candidates")
        con.unregister("research_fresh_specs")
    return pl.Series("place_key", [r[0] for r in rows], dtype=pl.String)


def read_source(source: Source, emit: Emit, read_as: RunOptions = READ_AS) -> pl.DataFrame:
    """The read stage: the source's rows (files, or the warehouse's selected places)."""
    emit(StageStarted("read"))
    rows, info = source.rows(read_as)
    emit(StageFinished("read", info, {"rows": rows.height}))
    return rows


def prepare(
    rows: pl.DataFrame,
    options: ResearchOptions,
    rates: Rates,
    *,
    con: duckdb.DuckDBPyConnection | None,
    now: datetime,
    emit: Emit = ignore,
    keys_given: bool = False,
) -> Prepared:
    """Everything after reading up to the first request; nothing sent, nothing written
    (`keys_given`: the rows' source_ids are their place_keys, `Source.keys_given`)."""
    emit(StageStarted("normalize"))
    places, rejects, norm = normalize(rows)
    emit(StageFinished("normalize", norm, {"rows": norm.rows, "rejected": norm.rejected}))
    emit(StageStarted("dedupe"))
    deduped, info = dedupe(places, keys_given=keys_given)
    emit(StageFinished("dedupe", info, {"unique": info.unique, "duplicates": info.duplicates}))
    submitted = pl.col("disposition") == "submitted"
    if options.sample is not None:  # a first look: the rows up to the N-th place to research
        firsts = deduped.filter(submitted).sort("row_ord").head(options.sample)
        if firsts.height == options.sample:
            last = int(firsts.get_column("row_ord")[-1])  # sorted: the last is the largest
            deduped = deduped.filter(pl.col("row_ord") <= last)
            rejects = rejects.filter(pl.col("row_ord") <= last)
    rows_read = deduped.height + rejects.height
    emit(StageStarted("fresh"))
    fresh = pl.Series("place_key", [], dtype=pl.String)
    if con is not None and not options.force:
        cutoff = now - timedelta(days=options.max_age_days)
        fresh = fresh_places(
            con, deduped.filter(submitted), list(field_shas(options.spec).values()), cutoff
        )
        deduped = deduped.with_columns(
            pl.when(submitted & pl.col("place_key").is_in(fresh.implode()))
            .then(pl.lit("skipped_fresh"))
            .otherwise(pl.col("disposition"))
            .alias("disposition")
        )
    fresh_rows = deduped.filter(pl.col("disposition") == "skipped_fresh").height
    emit(StageFinished("fresh", None, {"fresh": fresh_rows, "places": fresh.len()}))
    emit(StageStarted("plan"))
    to_send = deduped.filter(submitted).sort("row_ord")
    plan = plan_requests(to_send, options.spec, rates)
    requests = int(plan.get_column("request_no").n_unique()) if plan.height else 0
    emit(StageFinished("plan", None, {"places": plan.height, "chunks": requests}))
    run_rows = pl.concat(
        [
            deduped.select(
                "row_ord", "source_file", "source_row", "source_id", "place_key", "disposition",
                pl.when(pl.col("disposition") == "duplicate")
                .then(pl.lit("same place as row ") + pl.col("first_row_ord").cast(pl.String))
                .alias("note"),
                "own_key", "matched_row", "match_rule", "match_probability", "core_key",
                *ROW_FIELDS,
            ),
            rejects.select(
                "row_ord", "source_file", "source_row", "source_id",
                pl.lit(None, pl.String).alias("place_key"), pl.lit("rejected").alias("disposition"),
                pl.col("reason").alias("note"), pl.lit(None, pl.String).alias("own_key"),
                pl.lit(None, pl.String).alias("match_rule"),
                pl.lit(None, pl.Float64).alias("match_probability"),
            ),
        ],
        how="diagonal_relaxed",  # a reject has no place: its place columns are null
    ).sort("row_ord")  # fmt: skip
    return Prepared(run_rows, rejects, plan, rows_read, estimate(plan.height, options.spec, rates))


def _record(
    con: duckdb.DuckDBPyConnection,
    prepared: Prepared,
    run: dict[str, Any],
) -> None:
    run_id, now = run["run_id"], run["created_at"]
    with_run = pl.lit(run_id).alias("run_id")
    counts = prepared.run_rows.group_by("disposition").len()
    by = dict(counts.iter_rows())
    with transaction(con):
        RunBook(con, run_id).record({**run, **counts_of(prepared, by)})
        record_rows(
            con,
            run_id,
            {
                "run_rows": prepared.run_rows,
                "rejects": prepared.rejects.select(
                    "row_ord", "source_file", "source_row", "source_id", "field", "reason", "raw"
                ),
                "run_places": prepared.plan.select(
                    "place_key", pl.col("request_no").alias("chunk_no"), "position", "request"
                ),
            },
        )
        insert_frame(
            con,
            "research_requests",
            requests_of(prepared.plan).with_columns(
                with_run, pl.lit("planned").alias("state"), pl.lit(now).alias("planned_at")
            ),
        )


def counts_of(prepared: Prepared, by: dict[str, int]) -> dict[str, int]:
    return {
        "rows_read": prepared.rows_read,
        "rejected": by.get("rejected", 0),
        "duplicates": by.get("duplicate", 0),
        "skipped_fresh": by.get("skipped_fresh", 0),
        "submitted": prepared.plan.height,
    }


def research(
    inputs: Sequence[str] | Source,
    options: ResearchOptions,
    *,
    api: PlaceApiClient,
    db: Path | str,
    target: str,
    hook: Hook | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    on_event: Callable[[Event], None] | None = None,
) -> dict[str, Any]:
    """Run (or resume) the research of the places of `inputs` (files, or a `Source` such as
    the warehouse's `WarehouseSource`); the summary has `exit_code` (0, 1 or 3). `on_event`
    receives the run's typed events (`placeflow.events`) as it goes."""
    started = clock()
    spec = options.spec
    emit = emitter(on_event)
    source = inputs if isinstance(inputs, Source) else FileSource(tuple(inputs))
    rates = Rates.from_card(api.pricing())
    if options.estimate_only:
        rows = read_source(source, emit, options.read_as)
        existing = Path(db).exists() and str(db) != ":memory:"
        con = connect(db, read_only=True) if existing else None
        try:
            prepared = prepare(
                rows, options, rates, con=con, now=started, emit=emit,
                keys_given=source.keys_given,
            )  # fmt: skip
            out = estimate_summary(
                api, plan=prepared.plan, run_rows=prepared.run_rows, rows_read=prepared.rows_read,
                estimate=prepared.estimate, target=target,
            )  # fmt: skip
            credits = prepared.estimate.credits
            if con is not None and out["exit_code"] == EXIT_OK and credits:  # budgets, balance
                usage = api.usage()
                refused = budget_refusal(credits, max_credits=None, available=usage.spendable)
                refused = refused or within_budgets(
                    con, credits, kind="research", now=started, usage=usage
                )  # fmt: skip
                if refused is not None:
                    out.update(exit_code=EXIT_REFUSED, status="refused", message=refused)
        finally:
            if con is not None:
                con.close()
        emit(StageFinished("account", out, {"credits_estimated": prepared.estimate.credits}))
        return out
    reading = None if options.read_as == READ_AS else options.read_as.identity_json()
    print_ = fingerprint(source.identity(), spec, options.sample, reading)
    with connect(db) as con:
        found = con.execute(
            sql_text("queries/research_unfinished"), {"fingerprint": print_}
        ).fetchone()
        if found is None:
            rows = read_source(source, emit, options.read_as)
            prepared = prepare(
                rows, options, rates, con=con, now=started, emit=emit,
                keys_given=source.keys_given,
            )  # fmt: skip
            run_id = f"rr_{started:%Y%m%dT%H%M%S}_{secrets.token_hex(3)}"
            run = run_row(
                run_id, started, options, fingerprint=print_, inputs=source.inputs,
                target=target, key_hint=api.key_hint, estimate=prepared.estimate, rates=rates,
            )  # fmt: skip
            _record(con, prepared, run)
            fresh_run = True
        else:
            run_id, fresh_run = str(found[0]), False
        loop = Loop(hook, sleep, clock, emit, started)
        return _go(con, api, run_id, options, rates, fresh_run, loop)


@dataclass(frozen=True)
class Loop:
    """What the sending loop is given besides the run: its hooks, clock and event callback."""

    hook: Hook | None
    sleep: Callable[[float], None]
    clock: Callable[[], datetime]
    emit: Emit
    started: datetime


def _go(
    con: duckdb.DuckDBPyConnection,
    api: PlaceApiClient,
    run_id: str,
    options: ResearchOptions,
    rates: Rates,
    fresh_run: bool,
    loop: Loop,
) -> dict[str, Any]:
    emit = loop.emit
    emit(StageStarted("budget"))
    charged, possible = ledger_totals(con, run_id)
    left = con.execute(sql_text("queries/research_to_spend"), {"run_id": run_id}).fetchone()
    to_spend = int(left[0]) if left else 0
    budget = None if options.max_credits is None else options.max_credits - charged - possible
    refusal = budget_refusal(to_spend, max_credits=budget, available=None)
    if refusal is not None and charged + possible:
        refusal = (
            f"the rest of the research would cost up to {to_spend:,} credits, over the budget"
            f" left ({budget:,} of --max-credits {options.max_credits:,} after"
            f" {charged + possible:,} charged or possibly charged): raise --max-credits to go on"
        )
    usage_before: int | None = None
    if refusal is None and to_spend:
        usage = api.usage()
        refusal = budget_refusal(to_spend, max_credits=None, available=usage.spendable)
        usage_before = usage.current_usage
        refusal = refusal or within_budgets(  # read on the connection this run holds
            con, to_spend, kind="research", now=loop.clock(), usage=usage, exclude_run=run_id
        )  # fmt: skip
    fresh = usage_before  # this invocation's own reading: what new requests are judged from
    if refusal is None and fresh_run and to_spend:
        refusal = refusal_of(api, first_request(con, run_id))
    set_run(con, run_id, max_credits=options.max_credits)
    emit(StageFinished("budget", refusal, {"credits": to_spend, "refused": int(bool(refusal))}))
    if refusal is not None:
        emit(Note(refusal))
        RunBook(con, run_id).moved("refused", message=refusal)
        return _account(con, api, run_id, EXIT_REFUSED, loop, account=False)
    stored = con.execute("select usage_before from runs where run_id = ?", [run_id]).fetchone()
    if stored is not None and stored[0] is not None:
        usage_before = int(stored[0])
    RunBook(con, run_id).moved("started", usage_before=usage_before, message=None)
    emit(RunStarted(run_id, "research", to_spend, resumed=not fresh_run))
    ctx = SendContext(
        con=con, api=api, run_id=run_id, spec=options.spec, rates=rates,
        field_shas=field_shas(options.spec), now=loop.clock, sleep=loop.sleep,
        max_credits=options.max_credits, usage_before=fresh, charged_before=charged,
        exclusive_key=options.exclusive_key, resend_uncertain=options.resend_uncertain,
        hook=loop.hook, emit=emit,
    )  # fmt: skip
    code, status, message = EXIT_OK, "completed", None
    emit(StageStarted("send"))
    try:
        send_all(ctx)
    except Stop as stop:
        code, status, message = stop.exit_code, stop.status, str(stop)
    except InsufficientCredits as exc:
        code, status, message = EXIT_REFUSED, "interrupted", str(exc)
    totals = con.execute(sql_text("queries/research_totals"), {"run_id": run_id}).fetchone()
    doubtful = int(totals[3]) if totals else 0
    emit(StageFinished("send", None, {"requests": ctx.sent, "doubtful": doubtful}))
    if status == "completed" and doubtful:
        code, status = EXIT_FAILED, "interrupted"
        message = (
            f"{doubtful} request(s) lost or uncertain: their places have no answer;"
            " rerun with --resend-uncertain to buy them again. " + "; ".join(ctx.notes)
        )
    if message:
        emit(Note(message))
    ends = {"completed": "closed", "interrupted": "interrupted", "refused": "refused"}
    RunBook(con, run_id).moved(ends[status], status, message=message)
    return _account(con, api, run_id, code, loop, account=usage_before is not None)


def _account(
    con: duckdb.DuckDBPyConnection,
    api: PlaceApiClient,
    run_id: str,
    code: int,
    loop: Loop,
    *,
    account: bool,
) -> dict[str, Any]:
    loop.emit(StageStarted("account"))
    out = summary(
        con, api, run_id, code, loop.clock(), loop.started, account=account, journal=api.journal
    )
    if code != EXIT_REFUSED:  # a budget its spending took past the warning share, said
        out["budget_warnings"] = warn(
            lambda: con, kind="research", now=loop.clock(), api=api, emit=loop.emit, run_id=run_id
        )  # fmt: skip
    counts = {k: int(out[k]) for k in ("succeeded", "failed", "charged") if out.get(k) is not None}
    loop.emit(StageFinished("account", out, counts))
    return out
