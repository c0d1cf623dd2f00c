-- request_id_mismatch: a planned request whose id is not its place_key (results are matched
-- back by that id).

with

planned as (
    select
        run_id,
        place_key,
        request
    from run_places
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
