-- run_row_outcomes: every input row of every run with its disposition, its normalised fields
-- and the latest outcome of its place (places_latest through outcome_key: its own key, or the
-- earlier key of the same place a fresh outcome was found under); rejected rows carry the
-- reason. What `placeflow rows RUN_ID` writes out. The rows of a run still being opened
-- (run_openings) are left out until it is recorded.

create or replace view run_row_outcomes as

with

openings as (
    select run_id from run_openings
),

-- the rows of a run being opened (run_openings: its plan written in parts, no runs row yet) are
-- not part of the warehouse until the transaction that records the run: left out here, and
-- their rejects with them (joined to these rows)
run_rows_ as (
    select run_rows.*
    from run_rows
    anti join openings on run_rows.run_id = openings.run_id
),

rejects_ as (
    select
        run_id,
        row_ord,
        field,
        reason
    from rejects
),

latest as (
    select * from places_latest
),

final as (
    select
        run_rows_.run_id,
        run_rows_.row_ord,
        run_rows_.source_file,
        run_rows_.source_row,
        run_rows_.source_id,
        run_rows_.disposition,
        run_rows_.note,
        rejects_.field as reject_field,
        rejects_.reason as reject_reason,
        run_rows_.place_key,
        coalesce(run_rows_.outcome_key, run_rows_.place_key) as outcome_key,
        run_rows_.poi_name,
        run_rows_.street,
        run_rows_.address,
        run_rows_.city,
        run_rows_.region,
        run_rows_.postcode,
        run_rows_.country,
        run_rows_.latitude,
        run_rows_.longitude,
        latest.run_id as outcome_run_id,
        latest.mode as outcome_mode,
        latest.success,
        latest.operational_status,
        latest.existence_confidence,
        latest.closure_confidence,
        latest.error,
        latest.error_code,
        latest.outcome_at,
        latest.phone_number,
        latest.website_url,
        latest.opening_hours_value
    from run_rows_
    left join rejects_
        on run_rows_.run_id = rejects_.run_id and run_rows_.row_ord = rejects_.row_ord
    left join latest on coalesce(run_rows_.outcome_key, run_rows_.place_key) = latest.place_key
)

select * from final;

comment on view run_row_outcomes is 'Every input row of every run with its disposition, its normalised fields and its place''s latest outcome (placeflow rows writes it out). A run still being opened (run_openings) is left out until it is recorded.';
comment on column run_row_outcomes.run_id is 'The run that read the row.';
comment on column run_row_outcomes.row_ord is '0-based position of the row over the run''s inputs.';
comment on column run_row_outcomes.source_file is 'The input file the row came from.';
comment on column run_row_outcomes.source_row is 'The row''s 1-based data row number in its file.';
comment on column run_row_outcomes.source_id is 'The user''s own identifier of the row, if any.';
comment on column run_row_outcomes.disposition is 'submitted, duplicate, skipped_fresh, held_failing or rejected.';
comment on column run_row_outcomes.note is 'Detail of the disposition (reject reason, the row a duplicate repeats, a repair).';
comment on column run_row_outcomes.reject_field is 'For a rejected row: the field at fault (row when the whole row is).';
comment on column run_row_outcomes.reject_reason is 'For a rejected row: why, in words a user can act on.';
comment on column run_row_outcomes.place_key is 'The row''s place_key; null when rejected.';
comment on column run_row_outcomes.outcome_key is 'The place_key whose outcome answers the row (its own, or an earlier key of the same place).';
comment on column run_row_outcomes.poi_name is 'The name as normalised and sent.';
comment on column run_row_outcomes.street is 'The street line as normalised.';
comment on column run_row_outcomes.address is 'The unstructured address as normalised.';
comment on column run_row_outcomes.city is 'The city as normalised.';
comment on column run_row_outcomes.region is 'The region as normalised.';
comment on column run_row_outcomes.postcode is 'The postcode as normalised (lost leading zeros restored).';
comment on column run_row_outcomes.country is 'The ISO 3166-1 alpha-2 country.';
comment on column run_row_outcomes.latitude is 'The latitude as sent (repaired, or null when dropped).';
comment on column run_row_outcomes.longitude is 'The longitude as sent (repaired, or null when dropped).';
comment on column run_row_outcomes.outcome_run_id is 'The run whose outcome gave the place''s verdict.';
comment on column run_row_outcomes.outcome_mode is 'validate or enrich: the kind of that outcome.';
comment on column run_row_outcomes.success is 'Whether the service answered the place; null when never answered.';
comment on column run_row_outcomes.operational_status is 'open, closed, unknown, not_exists (or an unfamiliar value kept as sent).';
comment on column run_row_outcomes.existence_confidence is 'Confidence 0-1 that the place ever existed.';
comment on column run_row_outcomes.closure_confidence is 'Confidence 0-1 in a closed verdict.';
comment on column run_row_outcomes.error is 'The service''s error message when the place failed.';
comment on column run_row_outcomes.error_code is 'The service''s error_code when the place failed.';
comment on column run_row_outcomes.outcome_at is 'When placeflow loaded the outcome.';
comment on column run_row_outcomes.phone_number is 'The phone number, from the newest enrichment that asked for it.';
comment on column run_row_outcomes.website_url is 'The website URL, from the newest enrichment that asked for it.';
comment on column run_row_outcomes.opening_hours_value is 'Opening hours as JSON, from the newest enrichment that asked for it.';
