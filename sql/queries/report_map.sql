-- report_map: a repeatable sample (by hash of the key) of at most $points of the run's places
-- that have coordinates, with their outcome's status: the map's points (never every row).
-- Reads report_places (run it first). Parameters: $points.

with

located as (
    select
        key_hash,
        latitude,
        longitude,
        answered,
        success,
        operational_status
    from report_places
    where requested
        and latitude between -90 and 90
        and longitude between -180 and 180
),

sampled as (
    select * from located
    order by key_hash
    limit $points
),

final as (
    select
        latitude,
        longitude,
        case
            when not answered then 'not answered'
            when not success then 'failed'
            else coalesce(operational_status, 'no status')
        end as status,
        (select count(*) from located) as located
    from sampled
)

select * from final
