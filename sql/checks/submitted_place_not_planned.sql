-- submitted_place_not_planned: an input row marked submitted whose place the run does not send
-- (no run_places row).

with

submitted_rows as (
    select
        run_id,
        row_ord,
        place_key
    from run_rows
    where disposition = 'submitted'
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
