-- outcome_mode_mismatch: an outcome of the other kind than its run's mode (a validation in an
-- enrich run, or the reverse), or an outcome of no known run.

with

outcomes as (
    select
        run_id,
        place_key,
        mode
    from place_outcomes
),

run_modes as (
    select
        run_id,
        mode as run_mode
    from runs
),

final as (
    select
        outcomes.run_id,
        outcomes.place_key,
        outcomes.mode,
        run_modes.run_mode
    from outcomes
    left join run_modes on outcomes.run_id = run_modes.run_id
    where run_modes.run_mode is distinct from outcomes.mode
)

select * from final
