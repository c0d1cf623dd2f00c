-- rows_accounted: where every input row of one run went, from the warehouse's own tables
-- (run_rows, rejects, run_places, validations and enrichments); the run is
-- getvariable('run_id'). One row of counts; bench/scale_bench.py checks they add up.

with

run_rows_of_run as (
    select
        row_ord,
        place_key,
        disposition
    from run_rows
    where run_id = getvariable('run_id')
),

rejects_of_run as (
    select row_ord
    from rejects
    where run_id = getvariable('run_id')
),

places_of_run as (
    select place_key
    from run_places
    where run_id = getvariable('run_id')
),

outcomes_of_run as (
    select
        place_key,
        success,
        billable
    from validations
    where run_id = getvariable('run_id')
    union all
    select
        place_key,
        success,
        billable
    from enrichments
    where run_id = getvariable('run_id')
),

row_counts as (
    select
        count(*) as run_rows,
        count(distinct row_ord) as distinct_row_ords,
        count(*) filter (where disposition = 'rejected') as rejected,
        count(*) filter (where disposition = 'duplicate') as duplicates,
        count(*) filter (where disposition = 'skipped_fresh') as skipped_fresh,
        count(*) filter (where disposition = 'held_failing') as held_failing,
        count(*) filter (where disposition = 'submitted') as submitted,
        count(distinct place_key) filter (where disposition = 'submitted') as submitted_keys
    from run_rows_of_run
),

reject_counts as (
    select
        count(*) as rejects,
        count(*) filter (
            where row_ord not in (
                select row_ord from run_rows_of_run where disposition = 'rejected'
            )
        ) as rejects_not_in_run_rows
    from rejects_of_run
),

outcome_counts as (
    select
        count(*) as outcomes,
        count(distinct place_key) as outcome_keys,
        count(*) filter (where success) as succeeded,
        count(*) filter (where not success) as failed,
        count(*) filter (where billable) as billable
    from outcomes_of_run
),

unanswered as (
    select count(*) as submitted_without_outcome
    from run_rows_of_run as r
    where
        r.disposition = 'submitted'
        and not exists (select 1 from outcomes_of_run as o where o.place_key = r.place_key)
)

select
    row_counts.*,
    reject_counts.*,
    (select count(*) from places_of_run) as places_planned,
    outcome_counts.*,
    unanswered.*
from row_counts, reject_counts, outcome_counts, unanswered
