-- outcome_not_planned: an outcome whose place the run did not send, or that sits at another
-- chunk or position than the place was planned at (a result matched to the wrong place).

with

outcomes as (
    select
        run_id,
        place_key,
        chunk_no,
        position
    from place_outcomes
),

planned as (
    select
        run_id,
        place_key,
        chunk_no,
        position
    from run_places
),

final as (
    select
        outcomes.run_id,
        outcomes.place_key,
        outcomes.chunk_no,
        outcomes.position,
        planned.chunk_no as planned_chunk_no,
        planned.position as planned_position
    from outcomes
    left join planned
        on outcomes.run_id = planned.run_id
        and outcomes.place_key = planned.place_key
    where planned.place_key is null
        or planned.chunk_no <> outcomes.chunk_no
        or planned.position <> outcomes.position
)

select * from final
