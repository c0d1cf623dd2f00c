-- run_places_duplicate: a place planned twice in one run, or two places at one position of a
-- chunk (run_places keeps no unique index: the plan stage makes each once). A run still being
-- opened (run_openings) is left out until it is recorded.

with

openings as (
    select run_id from run_openings
),

places as (
    select
        run_places.run_id,
        run_places.place_key,
        run_places.chunk_no,
        run_places.position
    from run_places
    anti join openings on run_places.run_id = openings.run_id
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
