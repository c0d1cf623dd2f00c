-- known_places: the places already known in the warehouse (the rows earlier runs sent:
-- run_rows submitted) that share a block key with the places a new run's fuzzy pass is handed
-- (pf_known_keys: block_key, from sql/prepare/known_block_keys.sql), each place once (the row
-- of its newest run), with its normalised and match-only fields, input file and id: the fuzzy
-- pass matches the new places against them. The keys come from the macros pf_block_parts and
-- pf_block_keys (placeflow.pipeline.known), each row's parts taken once; run_rows is scanned
-- for the keys (the new ones probed in a hash table), then once more for the few rows picked.
-- A key more than $most known places share selects none of them (a chain's name in a city, a
-- hotline): their other keys (house number, postcode, a phone of their own) still do.
-- The rows of a run still being opened (run_openings) are not known yet: left out of `sent`,
-- and so of the rows picked (the run ids come from it).
-- Parameters: $most.

with

keys as (
    select block_key from pf_known_keys
),

openings as (
    select run_id from run_openings
),

sent as (
    select
        run_rows.run_id,
        run_rows.place_key,
        run_rows.poi_name,
        coalesce(run_rows.street, run_rows.address) as line,
        run_rows.city,
        run_rows.postcode,
        run_rows.country,
        run_rows.latitude,
        run_rows.longitude,
        run_rows.phone
    from run_rows
    anti join openings on run_rows.run_id = openings.run_id
    where run_rows.disposition = 'submitted' and run_rows.place_key is not null
),

parts as (
    select
        run_id,
        place_key,
        pf_block_parts(
            poi_name, line, city, postcode, country, latitude, longitude, phone
        ) as parts
    from sent
),

keyed as (
    select
        run_id,
        place_key,
        unnest(pf_block_keys(parts)) as block_key
    from parts
),

shared as (
    select keyed.*
    from keyed
    semi join keys on keyed.block_key = keys.block_key
),

small as (
    select block_key
    from shared
    group by block_key
    having count(*) <= $most
),

newest as (
    select
        shared.place_key,
        max(shared.run_id) as run_id
    from shared
    semi join small on shared.block_key = small.block_key
    group by shared.place_key
)

select
    run_rows.run_id,
    run_rows.place_key,
    run_rows.source_file,
    run_rows.source_id,
    run_rows.poi_name,
    run_rows.street,
    run_rows.address,
    run_rows.city,
    run_rows.region,
    run_rows.postcode,
    run_rows.country,
    run_rows.latitude,
    run_rows.longitude,
    run_rows.phone,
    run_rows.website
from run_rows
semi join newest
    on run_rows.run_id = newest.run_id and run_rows.place_key = newest.place_key
where run_rows.disposition = 'submitted'
