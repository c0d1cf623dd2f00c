-- report_places: the run's places, their request's country and coordinates (the JSON parsed
-- once, three keys in one pass) beside their outcome's status, kept as a temporary table that
-- report_outcomes and report_map read; the key is kept as its hash (the map's sample order).
-- Places without an outcome have answered = false; outcomes without a request row have no
-- country and no coordinates. Parameters: $run_id.

create or replace temp table report_places as

with

requests as (
    select
        place_key,
        json_extract_string(request, ['$.country', '$.latitude', '$.longitude']) as fields
    from run_places
    where run_id = $run_id
),

places as (
    select
        place_key,
        fields[1] as country,
        try_cast(fields[2] as double) as latitude,
        try_cast(fields[3] as double) as longitude
    from requests
),

outcomes as (
    select
        place_key,
        success,
        operational_status,
        closure_reason
    from place_outcomes
    where run_id = $run_id
),

final as (
    select
        hash(coalesce(places.place_key, outcomes.place_key)) as key_hash,
        places.place_key is not null as requested,
        outcomes.place_key is not null as answered,
        places.country,
        places.latitude,
        places.longitude,
        outcomes.success,
        outcomes.operational_status,
        outcomes.closure_reason
    from places
    full join outcomes on places.place_key = outcomes.place_key
)

select * from final
