-- report_changes: the run's detected changes counted by kind: closed, reopened and moved are
-- named from the field and its values, any other field is its own kind. Run only when the
-- place_changes table exists. Parameters: $run_id.

with

changes as (
    select
        field,
        old_value,
        new_value
    from place_changes
    where run_id = $run_id
),

kinds as (
    select
        case
            when field = 'operational_status' and new_value ilike '%closed%' then 'closed'
            when field = 'operational_status' and old_value ilike '%closed%' then 'reopened'
            when field = 'operational_status' and new_value ilike '%not_exists%'
                then 'not exists'
            when field = 'coordinates' then 'moved'
            else field
        end as kind
    from changes
),

final as (
    select
        kind,
        count(*) as changes
    from kinds
    group by kind
)

select * from final
order by changes desc, kind
