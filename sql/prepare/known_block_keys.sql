-- known_block_keys: the block keys of the places the fuzzy pass is handed (the first row of
-- each exact place_key: sql/prepare/dedupe_fuzzy_input.sql, the view pf_match_input), once
-- each: what the warehouse's known places are selected by (sql/queries/known_places.sql). The
-- keys come from the macros pf_block_parts and pf_block_keys (placeflow.pipeline.known), the
-- same over both.

with

parts as (
    select pf_block_parts(
        poi_name, coalesce(street, address), city, postcode, country, latitude, longitude,
        phone
    ) as parts
    from pf_match_input
),

keys as (
    select unnest(pf_block_keys(parts)) as block_key
    from parts
)

select distinct block_key
from keys
where block_key is not null
