-- failing_places: places whose last $failures outcomes or more all failed (no success since),
-- whatever the run's kind, newest failure first: a run holds them back unless asked to retry.
-- Parameters: $failures (how many failures in a row hold a place back).

with

outcomes as (
    select
        place_key,
        run_id,
        success,
        error,
        error_code,
        outcome_at
    from place_outcomes
),

last_success as (
    select
        place_key,
        max(outcome_at) as succeeded_at
    from outcomes
    where success
    group by place_key
),

failures_since as (
    select
        outcomes.place_key,
        count(*) as failures_in_a_row,
        max(outcomes.outcome_at) as last_failed_at,
        arg_max(outcomes.error, outcomes.outcome_at) as last_error,
        arg_max(outcomes.error_code, outcomes.outcome_at) as last_error_code,
        any_value(last_success.succeeded_at) as last_succeeded_at
    from outcomes
    left join last_success on outcomes.place_key = last_success.place_key
    where not outcomes.success
        and (last_success.succeeded_at is null or outcomes.outcome_at > last_success.succeeded_at)
    group by outcomes.place_key
),

final as (
    select * from failures_since where failures_in_a_row >= $failures
)

select * from final
order by last_failed_at desc, place_key
