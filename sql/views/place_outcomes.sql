-- place_outcomes: every outcome of every run, validations and enrichments alike, with the
-- signature of the run that produced it. outcome_at is when placeflow loaded the outcome (its
-- own clock, the one freshness is measured with); service_at is the service's own timestamp.

create or replace view place_outcomes as

with

run_signatures as (
    select
        run_id,
        signature
    from runs
),

validation_rows as (
    select * from validations
),

enrichment_rows as (
    select * from enrichments
),

validation_outcomes as (
    select
        'validate' as mode,
        run_id,
        place_key,
        chunk_no,
        position,
        success,
        billable,
        operational_status,
        existence_confidence,
        closure_confidence,
        closure_reason,
        error,
        error_code,
        validated_at as service_at,
        loaded_at as outcome_at
    from validation_rows
),

enrichment_outcomes as (
    select
        'enrich' as mode,
        run_id,
        place_key,
        chunk_no,
        position,
        success,
        billable,
        operational_status,
        existence_confidence,
        closure_confidence,
        closure_reason,
        error,
        error_code,
        enriched_at as service_at,
        loaded_at as outcome_at
    from enrichment_rows
),

outcomes as (
    select * from validation_outcomes
    union all
    select * from enrichment_outcomes
),

final as (
    select
        outcomes.mode,
        run_signatures.signature,
        outcomes.run_id,
        outcomes.place_key,
        outcomes.chunk_no,
        outcomes.position,
        outcomes.success,
        outcomes.billable,
        outcomes.operational_status,
        outcomes.existence_confidence,
        outcomes.closure_confidence,
        outcomes.closure_reason,
        outcomes.error,
        outcomes.error_code,
        outcomes.service_at,
        outcomes.outcome_at
    from outcomes
    left join run_signatures on outcomes.run_id = run_signatures.run_id
)

select * from final;

comment on view place_outcomes is 'Every outcome of every run (validations and enrichments) with its run''s signature.';
comment on column place_outcomes.mode is 'validate or enrich: the table the outcome comes from.';
comment on column place_outcomes.signature is 'The signature of the run that produced the outcome (mode|attributes|summary).';
comment on column place_outcomes.run_id is 'The run that produced the outcome.';
comment on column place_outcomes.place_key is 'The place.';
comment on column place_outcomes.chunk_no is 'The chunk the place was sent in.';
comment on column place_outcomes.position is 'The line of the outcome in the chunk''s result file.';
comment on column place_outcomes.success is 'Whether the service answered the place.';
comment on column place_outcomes.billable is 'Whether the service charges the row under the bulk rule.';
comment on column place_outcomes.operational_status is 'open, closed, unknown, not_exists, or an unfamiliar value kept as sent.';
comment on column place_outcomes.existence_confidence is 'Confidence 0-1 that the place ever existed.';
comment on column place_outcomes.closure_confidence is 'Confidence 0-1 in a closed verdict.';
comment on column place_outcomes.closure_reason is 'Why closed; null unless closed.';
comment on column place_outcomes.error is 'The service''s error message for a failed row.';
comment on column place_outcomes.error_code is 'The service''s error_code for a failed row.';
comment on column place_outcomes.service_at is 'The service''s own timestamp of the outcome (validation_timestamp or enrichment_timestamp).';
comment on column place_outcomes.outcome_at is 'When placeflow loaded the outcome; freshness is measured from it.';
