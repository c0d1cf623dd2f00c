-- run_places_duplicate: a place planned twice in one run, or two places at one position of a
-- chunk (run_places keeps no unique index: the plan stage makes each once).

with

places as (
    select
        run_id,
        place_key,
        chunk_no,
        position
    from run_places
),

same_key as (
    select
        run_id,
        'place_key ' || place_key as duplicate,
        count(*) as times
    from places
    group by run_id, place_key
    having count(*) > 1
),

same_position as (
    select
        run_id,
        'chunk ' || chunk_no || ' position ' || position as duplicate,
        count(*) as times
    from places
    group by run_id, chunk_no, position
    having count(*) > 1
),

final as (
    select * from same_key
    union all
    select * from same_position
)

select * from final
