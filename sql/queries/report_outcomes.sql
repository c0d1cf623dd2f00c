-- report_outcomes: the run's outcomes counted by country and operational status (closed with a
-- temporary reason counted apart; failed answers as 'failed'). Country is the one submitted
-- in the place's request ('' when the input had none). Reads report_places (run it first).

with

outcomes as (
    select
        country,
        success,
        operational_status,
        closure_reason
    from report_places
    where answered
),

classified as (
    select
        coalesce(country, '') as country,
        case
            when not success then 'failed'
            when operational_status = 'closed' and closure_reason = 'temporary'
                then 'temporarily closed'
            when operational_status is null then 'no status'
            else operational_status
        end as status
    from outcomes
),

final as (
    select
        country,
        status,
        count(*) as places
    from classified
    group by country, status
)

select * from final
order by country, status
