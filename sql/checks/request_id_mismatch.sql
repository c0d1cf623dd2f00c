-- request_id_mismatch: a planned request whose id is not its place_key (results are matched
-- back by that id). A run still being opened (run_openings) is left out until it is recorded.

with

openings as (
    select run_id from run_openings
),

planned as (
    select
        run_places.run_id,
        run_places.place_key,
        run_places.request
    from run_places
    anti join openings on run_places.run_id = openings.run_id
),

final as (
    select
        run_id,
        place_key,
        json_extract_string(request, '$.id') as request_id
    from planned
    where json_extract_string(request, '$.id') is distinct from place_key
)

select * from final
