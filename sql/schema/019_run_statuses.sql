-- 019 run statuses (issue 43): runs.status takes the ends a run now tells apart, each with its
-- exit code (docs/cli.md): left_to_other_run (4: places left to another run still have no
-- answer), double_charged (5: the service billed work twice, booked and named) and all_rejected
-- (6: every input row was rejected). DuckDB cannot alter a check, so runs is rebuilt as 017 made
-- it with the wider check, every row and comment kept. Its statuses, and research_requests'
-- states, are moved only through the lifecycle tables (src/placeflow/state/lifecycle.py).

create table runs_019 (
    run_id varchar primary key,
    created_at timestamptz not null,
    finished_at timestamptz,
    status varchar not null
        check (status in (
            'planned', 'running', 'completed', 'failed', 'refused', 'interrupted',
            'left_to_other_run', 'double_charged', 'all_rejected'
        )),
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

insert into runs_019 by name select * from runs;

drop table runs;

alter table runs_019 rename to runs;

comment on table runs is 'One row per run of the pipeline (validate, enrich or research): what it was asked, against what, and how it ended.';
comment on column runs.run_id is 'Identifier of the run (run_<utc timestamp>_<random hex>; rr_... for a research run).';
comment on column runs.created_at is 'When the run was opened.';
comment on column runs.finished_at is 'When the run ended (completed, failed or refused); null while it runs or after an interruption.';
comment on column runs.status is 'planned, running, completed, failed, refused (a budget or balance check said no; nothing spent), interrupted (stopped part way; resumable), left_to_other_run (places left to another run still have no answer), double_charged (the service billed work twice; booked in the ledger) or all_rejected (every input row was rejected). Moved only by the runs lifecycle (src/placeflow/state/lifecycle.py).';
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
