-- report_research_answers: a research run's answers counted per field by field status
-- (confirmed, estimated, unconfirmed, cost_capped, rejected; error for a row that failed) and
-- by confidence (high, medium, low; none when the answer has no value). Parameters: $run_id.

with

answers as (
    select
        field,
        status,
        confidence
    from research_answers
    where run_id = $run_id
),

by_status as (
    select
        'status' as measure,
        field,
        status as value,
        count(*) as answers
    from answers
    group by field, status
),

by_confidence as (
    select
        'confidence' as measure,
        field,
        coalesce(confidence, 'none') as value,
        count(*) as answers
    from answers
    group by field, coalesce(confidence, 'none')
),

final as (
    select * from by_status
    union all
    select * from by_confidence
)

select * from final
order by measure, field, value
