-- double_outcomes: a place_key with more than one outcome in one run (twice in one table, or a
-- validation and an enrichment).

with

outcomes as (
    select
        run_id,
        place_key
    from place_outcomes
),

final as (
    select
        run_id,
        place_key,
        count(*) as outcomes
    from outcomes
    group by run_id, place_key
    having count(*) > 1
)

select * from final
