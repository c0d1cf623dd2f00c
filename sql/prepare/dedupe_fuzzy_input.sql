-- dedupe_fuzzy_input: what the fuzzy pass is handed of each unique place: the first row of
-- each exact place_key (a key of several rows: pf_dedupe_repeated), its key, row_ord, match
-- fields (those the staged places have) and its input file and id (the id rule), in input
-- order.

with

places as (
    select * from pf_staged_places
),

repeated as (
    select * from pf_dedupe_repeated
),

firsts as (
    select places.*
    from places
    left join repeated on places.place_key = repeated.place_key
    where repeated.place_key is null or places.row_ord = repeated.first_row_ord
)

select
    columns(
        '^(place_key|row_ord|poi_name|street|address|city|region|postcode|country|latitude'
        || '|longitude|phone|website|source_file|source_id)$'
    )
from firsts
order by row_ord
