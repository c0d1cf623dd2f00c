-- known_places: the places already known in the warehouse (the rows earlier runs sent:
-- run_rows submitted) that share a block key with the places a new run's fuzzy pass is handed
-- (pf_known_keys: block_key, from sql/prepare/known_block_keys.sql), each place once (the row
-- of its newest run), with its normalised and match-only fields, input file and id: the fuzzy
-- pass matches the new places against them. The keys are those of the macro pf_block_keys
-- (placeflow.pipeline.known); the whole of run_rows is scanned once, the new keys probed in a
-- hash table.

with

keys as (
    select block_key from pf_known_keys
),

sent as (
    select
        run_id,
        place_key,
        source_file,
        source_id,
        poi_name,
        street,
        address,
        city,
        region,
        postcode,
        country,
        latitude,
        longitude,
        phone,
        website
    from run_rows
    where disposition = 'submitted' and place_key is not null
),

keyed as (
    select
        sent.*,
        unnest(pf_block_keys(
            poi_name, coalesce(street, address), city, postcode, country, latitude, longitude,
            phone
        )) as block_key
    from sent
),

shared as (
    select keyed.* exclude (block_key)
    from keyed
    semi join keys on keyed.block_key = keys.block_key
)

select distinct on (place_key) *
from shared
order by place_key, run_id desc
