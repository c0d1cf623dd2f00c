-- planned_place_not_submitted: a place the run sends that no input row of the run was
-- submitted for (money spent on a place nobody asked for). A run still being opened
-- (run_openings) may have its places written before its rows: left out.

with

openings as (
    select run_id from run_openings
),

planned as (
    select
        run_places.run_id,
        run_places.place_key,
        run_places.chunk_no
    from run_places
    anti join openings on run_places.run_id = openings.run_id
),

submitted_rows as (
    select
        run_id,
        place_key
    from run_rows
    where disposition = 'submitted'
),

final as (
    select planned.*
    from planned
    anti join submitted_rows
        on planned.run_id = submitted_rows.run_id
        and planned.place_key = submitted_rows.place_key
)

select * from final
