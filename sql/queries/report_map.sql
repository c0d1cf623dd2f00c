-- report_map: a repeatable sample (by hash of the key) of at most $points of the run's places that have
-- coordinates, with their outcome's status: the map's points (never every row).
-- Parameters: $run_id, $points.

with

places as (
    select
        place_key,
        try_cast(json_extract_string(request, '$.latitude') as double) as latitude,
        try_cast(json_extract_string(request, '$.longitude') as double) as longitude
    from run_places
    where run_id = $run_id
),

located as (
    select * from places
    where latitude between -90 and 90 and longitude between -180 and 180
),

sampled as (
    select * from located
    order by hash(place_key)
    limit $points
),

outcomes as (
    select
        place_key,
        success,
        operational_status
    from place_outcomes
    where run_id = $run_id
),

final as (
    select
        sampled.latitude,
        sampled.longitude,
        case
            when outcomes.place_key is null then 'not answered'
            when not outcomes.success then 'failed'
            else coalesce(outcomes.operational_status, 'no status')
        end as status,
        (select count(*) from located) as located
    from sampled
    left join outcomes on sampled.place_key = outcomes.place_key
)

select * from final
