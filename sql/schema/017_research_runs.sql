-- 017 research runs (issue 36): research is a run like any other. runs takes research runs
-- (mode research, with the fields asked, the identity and existence flags, the sample and the
-- rate card's research rates) and credit_ledger research's charges and possible charges (kind
-- possible), so one table lists every run and one ledger holds every credit. Every row of
-- research_runs and research_ledger moves across, not a credit lost; both tables are dropped and
-- come back as views over the shared tables (sql/views/), so scripts reading them keep working.
-- research_requests stays research's own: its requests' write-ahead lifecycle.

-- runs ---------------------------------------------------------------------------------------

create table runs_017 (
    run_id varchar primary key,
    created_at timestamptz not null,
    finished_at timestamptz,
    status varchar not null
        check (status in ('planned', 'running', 'completed', 'failed', 'refused', 'interrupted')),
    mode varchar not null check (mode in ('validate', 'enrich', 'research')),
    attributes varchar not null default '',
    include_summary boolean not null default false,
    signature varchar not null,
    inputs varchar,
    options varchar,
    target varchar,
    -- like, not starts_with: DuckDB 2 cannot replay a WAL that alters a table whose check
    -- calls starts_with (core_functions is not loaded yet and is fetched from the network).
    key_hint varchar check (
        key_hint is null
        or length(key_hint) <= 4
        or (key_hint like '…%' and length(key_hint) <= 5)
    ),
    fingerprint varchar,
    rows_read bigint not null default 0,
    rejected bigint not null default 0,
    duplicates bigint not null default 0,
    skipped_fresh bigint not null default 0,
    submitted bigint not null default 0,
    succeeded bigint not null default 0,
    failed bigint not null default 0,
    credits_estimated bigint,
    usage_before bigint,
    usage_after bigint,
    possible_extra_credits bigint not null default 0,
    message varchar,
    held_failing bigint default 0,
    claimed bigint default 0,
    owner_host varchar,
    owner_pid bigint,
    heartbeat_at timestamptz,
    fields varchar,
    verify_identity boolean,
    validate_existence boolean,
    sample integer,
    max_credits bigint,
    credits_per_field integer,
    credits_per_identity integer
);

insert into runs_017 by name
select
    *,
    try_cast(json_extract_string(options, '$.max_credits') as bigint) as max_credits
from runs;

insert into runs_017 by name
with

answered as (
    select
        run_id,
        count(distinct place_key) filter (where row_status <> 'error') as succeeded,
        count(distinct place_key) filter (where row_status = 'error') as failed
    from research_answers
    group by run_id
)

select
    research_runs.run_id,
    research_runs.created_at,
    research_runs.finished_at,
    research_runs.status,
    'research' as mode,
    'research|' || left(
        sha256(
            research_runs.fields || '|' || lower(research_runs.verify_identity::varchar) || '|'
            || lower(research_runs.validate_existence::varchar)
        ),
        16
    ) || '|' as signature,
    research_runs.inputs,
    json_object(
        'mode', 'research', 'max_credits', research_runs.max_credits,
        'sample', research_runs.sample
    )::varchar as options,
    research_runs.target,
    -- as runs keep it (the client's hint, …a1b2), so runs on one key are seen to share it
    case
        when research_runs.key_hint like '…%' or length(research_runs.key_hint) < 4
            then research_runs.key_hint
        else '…' || right(research_runs.key_hint, 4)
    end as key_hint,
    research_runs.fingerprint,
    research_runs.rows_read,
    research_runs.rejected,
    research_runs.duplicates,
    research_runs.skipped_fresh,
    research_runs.submitted,
    coalesce(answered.succeeded, 0) as succeeded,
    coalesce(answered.failed, 0) as failed,
    research_runs.credits_estimated,
    research_runs.usage_before,
    research_runs.usage_after,
    research_runs.message,
    research_runs.fields,
    research_runs.verify_identity,
    research_runs.validate_existence,
    research_runs.sample,
    research_runs.max_credits,
    research_runs.credits_per_field,
    research_runs.credits_per_identity
from research_runs
left join answered on research_runs.run_id = answered.run_id;

drop table research_runs;

drop table runs;

alter table runs_017 rename to runs;

comment on table runs is 'One row per run of the pipeline (validate, enrich or research): what it was asked, against what, and how it ended.';
comment on column runs.run_id is 'Identifier of the run (run_<utc timestamp>_<random hex>; rr_... for a research run).';
comment on column runs.created_at is 'When the run was opened.';
comment on column runs.finished_at is 'When the run ended (completed, failed or refused); null while it runs or after an interruption.';
comment on column runs.status is 'planned, running, completed, failed, refused (budget check said no; nothing spent) or interrupted (stopped part way; resumable).';
comment on column runs.mode is 'validate, enrich or research: which service operation the run performs (research: POST /v1/deep-research of caller-defined fields).';
comment on column runs.attributes is 'The enrich attributes asked for, canonical order, comma-joined; empty for validate.';
comment on column runs.include_summary is 'Whether enrich requests asked for place_summary.';
comment on column runs.signature is 'mode|attributes|summary flag: outcomes are interchangeable (fresh) only between runs with the same signature. A research run''s is research|<hash of its fields and flags>| (its answers are fresh per field, by research_answers.field_sha).';
comment on column runs.inputs is 'JSON array of the input paths as given.';
comment on column runs.options is 'JSON object of every run option (mode, attributes, budget, max age, route, chunk size, column mapping, encoding); a research run''s: mode, max_credits, sample.';
comment on column runs.target is 'The service the run talked to: ''embedded sandbox'' or the base URL.';
comment on column runs.key_hint is 'The last 4 characters of the API key, optionally after an ellipsis (…a1b2); never more (enforced).';
comment on column runs.fingerprint is 'sha256 of the run command (input paths with size and mtime, and the options): finds an unfinished run of the same command to resume.';
comment on column runs.rows_read is 'Input rows read, over all input files.';
comment on column runs.rejected is 'Input rows rejected before sending (see rejects).';
comment on column runs.duplicates is 'Input rows whose place_key an earlier row of the run already had.';
comment on column runs.skipped_fresh is 'Input rows whose place had a fresh successful outcome of the same signature, so were not sent.';
comment on column runs.submitted is 'Unique places the run sends (rows of run_places).';
comment on column runs.succeeded is 'Places sent whose outcome has success true (research: places answered without a row error).';
comment on column runs.failed is 'Places sent whose outcome has success false (research: places whose answer was a row error).';
comment on column runs.credits_estimated is 'The most the run can cost, estimated before anything was spent.';
comment on column runs.usage_before is 'The service''s current_usage (GET /v1/usage) before the run spent anything; null when not asked.';
comment on column runs.usage_after is 'The service''s current_usage after the run; null until known.';
comment on column runs.possible_extra_credits is 'Charges the client could not rule out, such as a synchronous request retried after a dropped connection (research keeps its own as credit_ledger entries of kind possible).';
comment on column runs.message is 'Why the run was refused, failed or interrupted, and what to do next; null when it completed cleanly.';
comment on column runs.held_failing is 'Input rows whose place failed several times in a row and was held back (not sent; --retry-failed sends them).';
comment on column runs.claimed is 'Input rows whose place another unfinished run was buying (the same answer): not bought again, answered when that run loads it.';
comment on column runs.owner_host is 'The host of the process carrying the run out (the last to open or resume it).';
comment on column runs.owner_pid is 'The process id carrying the run out on owner_host.';
comment on column runs.heartbeat_at is 'When that process last said it was alive (it beats while it waits on the service); a claim of a run whose process is gone passes to its resume.';
comment on column runs.fields is 'A research run''s fields: JSON array of the DeepResearchFieldSpecs sent (name, description, value_type, allowed_values); null for other runs.';
comment on column runs.verify_identity is 'A research run''s verify_identity flag (+ the rate card''s identity credits per row); null for other runs.';
comment on column runs.validate_existence is 'A research run''s validate_existence flag (an existence attribute per place); null for other runs.';
comment on column runs.sample is 'A research run''s --sample N: only the first N unique places were researched; null for all, and for other runs.';
comment on column runs.max_credits is 'The run''s budget (--max-credits) as last given; null when none was given.';
comment on column runs.credits_per_field is 'A research run''s rate: the rate card''s credits per place per attribute (deep_research_field); null for other runs.';
comment on column runs.credits_per_identity is 'A research run''s rate card credits per row for verify_identity; null for other runs.';

-- credit_ledger ------------------------------------------------------------------------------

create table credit_ledger_017 (
    run_id varchar not null,
    chunk_no integer,
    ref varchar not null,
    kind varchar not null
        check (kind in ('hold', 'charge', 'release', 'adjustment', 'possible')),
    credits bigint not null,
    recorded_at timestamptz not null,
    note varchar,
    check (credits >= 0 or kind = 'adjustment')
);

insert into credit_ledger_017 by name select * from credit_ledger;

insert into credit_ledger_017 by name
select
    run_id,
    request_no as chunk_no,
    ref,
    kind,
    credits,
    recorded_at,
    note
from research_ledger;

drop table research_ledger;

drop table credit_ledger;

alter table credit_ledger_017 rename to credit_ledger;

comment on table credit_ledger is 'Every credit movement a run caused: holds at job submission, charges, releases, adjustments to the service''s own usage, and research requests'' possible charges.';
comment on column credit_ledger.run_id is 'The run that spent the credits.';
comment on column credit_ledger.chunk_no is 'The chunk (job or sync batch; a research run''s request_no) the entry belongs to; null for a run''s adjustment.';
comment on column credit_ledger.ref is 'The job''s batch_id, or the request id (else the chunk ref) of a synchronous batch or research request (rq-<run>-<request_no>[-<attempt> after the first] when its answer was lost); usage for an adjustment.';
comment on column credit_ledger.kind is 'hold (reserved at submission), charge (settled), release (a hold given back), adjustment (signed: the service''s usage delta minus the charges, once the run settled) or possible (a research request that may have been billed without its answer: not ruled out, not counted as charged).';
comment on column credit_ledger.credits is 'Credits moved (never negative except an adjustment, whose sign is its direction).';
comment on column credit_ledger.recorded_at is 'When placeflow recorded the entry (named so because AT is a keyword in DuckDB 2).';
comment on column credit_ledger.note is 'Why, in words (e.g. 1 credit per row held at submission).';
