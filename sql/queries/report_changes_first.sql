-- report_changes_first: the run's first $limit changes (by detection time, then place),
-- with the place's submitted name. Run only when place_changes exists.
-- Parameters: $run_id, $limit.

with

changes as (
    select
        place_key,
        field,
        old_value,
        new_value,
        detected_at
    from place_changes
    where run_id = $run_id
),

first_changes as (
    select * from changes
    order by detected_at, place_key, field
    limit $limit
),

places as (
    select
        place_key,
        request
    from run_places
    where run_id = $run_id
),

final as (
    select
        first_changes.detected_at,
        first_changes.place_key,
        json_extract_string(places.request, '$.poi_name') as place_name,
        first_changes.field,
        first_changes.old_value,
        first_changes.new_value
    from first_changes
    left join places on first_changes.place_key = places.place_key
)

select * from final
order by detected_at, place_key, field
