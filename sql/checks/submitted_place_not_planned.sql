-- submitted_place_not_planned: an input row marked submitted whose place the run does not send
-- (no run_places row). A run still being opened (run_openings) may have its rows written
-- before its places: left out.

with

openings as (
    select run_id from run_openings
),

submitted_rows as (
    select
        run_rows.run_id,
        run_rows.row_ord,
        run_rows.place_key
    from run_rows
    anti join openings on run_rows.run_id = openings.run_id
    where run_rows.disposition = 'submitted'
),

planned as (
    select
        run_id,
        place_key
    from run_places
),

final as (
    select submitted_rows.*
    from submitted_rows
    anti join planned
        on submitted_rows.run_id = planned.run_id
        and submitted_rows.place_key = planned.place_key
)

select * from final
