-- known_block_keys: the block keys of the places the fuzzy pass is handed (the first row of
-- each exact place_key: sql/prepare/dedupe_fuzzy_input.sql, the view pf_match_input), once
-- each: what the warehouse's known places are selected by (sql/queries/known_places.sql). The
-- keys come from the macro pf_block_keys (placeflow.pipeline.known), the same over both.

with

places as (
    select
        poi_name,
        coalesce(street, address) as line,
        city,
        postcode,
        country,
        latitude,
        longitude,
        phone
    from pf_match_input
),

keys as (
    select unnest(
        pf_block_keys(poi_name, line, city, postcode, country, latitude, longitude, phone)
    ) as block_key
    from places
)

select distinct block_key
from keys
where block_key is not null
