-- report_rejects: the run's rejected rows counted by field and reason, most frequent first.
-- Parameters: $run_id, $top (how many reasons; the rest are summed by the caller).

with

run_rejects as (
    select
        coalesce(field, 'whole row') as field,
        reason
    from rejects
    where run_id = $run_id
),

counted as (
    select
        field,
        reason,
        count(*) as rows
    from run_rejects
    group by field, reason
),

final as (
    select
        field,
        reason,
        rows,
        sum(rows) over () as total
    from counted
    order by rows desc, field, reason
    limit $top
)

select * from final
