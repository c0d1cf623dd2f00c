-- research_runs: the research runs (runs of mode research) in the shape research_runs had as a
-- table before migration 017, so scripts reading it keep working: runs is the one table of
-- every run, and research writes its rows there.

create or replace view research_runs as

with

research as (
    select * from runs where mode = 'research'
),

final as (
    select
        run_id,
        created_at,
        finished_at,
        status,
        fields,
        verify_identity,
        validate_existence,
        sample,
        max_credits,
        fingerprint,
        inputs,
        target,
        key_hint,
        rows_read,
        rejected,
        duplicates,
        skipped_fresh,
        submitted,
        credits_estimated,
        credits_per_field,
        credits_per_identity,
        usage_before,
        usage_after,
        message
    from research
)

select * from final;

comment on view research_runs is 'The research runs (runs of mode research), as the table of that name had them before migration 017.';
comment on column research_runs.run_id is 'Identifier of the run (rr_<utc timestamp>_<random hex>).';
comment on column research_runs.created_at is 'When the run was opened.';
comment on column research_runs.finished_at is 'When the run ended; null while it runs or after an interruption.';
comment on column research_runs.status is 'planned, running, completed, failed, refused (budget, balance or field policy; nothing spent by the refused request) or interrupted (resumable by the same command).';
comment on column research_runs.fields is 'JSON array of the DeepResearchFieldSpecs sent (name, description, value_type, allowed_values).';
comment on column research_runs.verify_identity is 'Whether requests asked verify_identity (+ the identity credits per row).';
comment on column research_runs.validate_existence is 'Whether requests asked validate_existence (an existence attribute per row).';
comment on column research_runs.sample is '--sample N: only the first N unique places were researched; null for all.';
comment on column research_runs.max_credits is 'The run''s budget (--max-credits); null when none was given.';
comment on column research_runs.fingerprint is 'sha256 of the inputs (paths, sizes, mtimes) and the field spec: finds an unfinished run of the same command to resume.';
comment on column research_runs.inputs is 'JSON array of the input paths as given.';
comment on column research_runs.target is 'The service the run talked to.';
comment on column research_runs.key_hint is 'The last 4 characters of the API key after an ellipsis (…a1b2), as runs keep it; never more.';
comment on column research_runs.rows_read is 'Input rows read, over all input files.';
comment on column research_runs.rejected is 'Input rows rejected before sending (see rejects).';
comment on column research_runs.duplicates is 'Input rows whose place an earlier row of the run already had.';
comment on column research_runs.skipped_fresh is 'Input rows whose place had a fresh answer for every field of the same spec.';
comment on column research_runs.submitted is 'Unique places the run researches (rows of run_places).';
comment on column research_runs.credits_estimated is 'Credits the run''s requests can cost, from the rate card, before anything was spent.';
comment on column research_runs.credits_per_field is 'The rate card''s credits per place per attribute (deep_research_field).';
comment on column research_runs.credits_per_identity is 'The rate card''s credits per row for verify_identity.';
comment on column research_runs.usage_before is 'The service''s current_usage (GET /v1/usage) before the run spent anything.';
comment on column research_runs.usage_after is 'The service''s current_usage after the run; null until known.';
comment on column research_runs.message is 'Why the run was refused, failed or interrupted, and what to do next.';
