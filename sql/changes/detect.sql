-- detect: the changes shown by the outcomes of run $run_id. Each field the run's successful
-- outcomes answered (place_facts) is compared with the previous answer of the same field for
-- the same place (the newest earlier successful outcome that answered it, whatever its run's
-- mode), by place_fact_changed's noise rules. A place answered for the first time, or a field
-- answered for the first time, is no change; a failed outcome answers nothing, so hides nothing.
-- Parameters: $run_id.

with

run_answers as (
    select distinct place_key
    from place_facts
    where run_id = $run_id
),

facts as (
    select place_facts.*
    from place_facts
    semi join run_answers on place_facts.place_key = run_answers.place_key
),

sequenced as (
    select
        *,
        lag(run_id) over answers as prev_run_id,
        lag(value) over answers as prev_value,
        lag(compare_key) over answers as prev_key,
        lag(latitude) over answers as prev_latitude,
        lag(longitude) over answers as prev_longitude
    from facts
    window answers as (partition by place_key, field order by outcome_at, run_id)
),

changed as (
    select *
    from sequenced
    where run_id = $run_id
        and prev_run_id is not null
        and place_fact_changed(
            field, compare_key, prev_key, latitude, longitude, prev_latitude, prev_longitude
        )
),

closure_reasons as (
    select
        place_key,
        lower(value) as closure_reason
    from facts
    where run_id = $run_id and field = 'closure_reason'
),

final as (
    select
        changed.run_id,
        changed.place_key,
        changed.field,
        case
            when changed.field = 'operational_status' then
                case
                    when lower(changed.value) = 'closed'
                        and closure_reasons.closure_reason = 'relocated' then 'moved'
                    when lower(changed.value) = 'closed' then 'closed'
                    when lower(changed.value) = 'not_exists' then 'not_exists'
                    when lower(changed.value) = 'open'
                        and lower(changed.prev_value) in ('closed', 'not_exists') then 'reopened'
                    else 'verdict'
                end
            when changed.field = 'closure_reason' then
                case when lower(changed.value) = 'relocated' then 'moved' else 'closed' end
            when changed.field = 'existence' then 'verdict'
            when changed.field = 'coordinates' then 'moved'
            else changed.field
        end as kind,
        changed.prev_value as old_value,
        changed.value as new_value,
        changed.prev_run_id as old_run_id,
        changed.outcome_at
    from changed
    left join closure_reasons on changed.place_key = closure_reasons.place_key
)

select * from final
