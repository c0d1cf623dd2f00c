-- report_outcomes: the run's outcomes counted by country and operational status (closed with a
-- temporary reason counted apart; failed answers as 'failed'). Country is the one submitted
-- in the place's request (null when the input had none). Parameters: $run_id.

with

outcomes as (
    select
        place_key,
        success,
        operational_status,
        closure_reason
    from place_outcomes
    where run_id = $run_id
),

places as (
    select
        place_key,
        json_extract_string(request, '$.country') as country
    from run_places
    where run_id = $run_id
),

classified as (
    select
        coalesce(places.country, '') as country,
        case
            when not outcomes.success then 'failed'
            when outcomes.operational_status = 'closed' and outcomes.closure_reason = 'temporary'
                then 'temporarily closed'
            when outcomes.operational_status is null then 'no status'
            else outcomes.operational_status
        end as status
    from outcomes
    left join places on outcomes.place_key = places.place_key
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
