-- dedupe_repeated: the exact place_keys that more than one staged place (pf_staged_places)
-- has, and the first row of each (the lowest row_ord). Keys of one row need nothing more.

with

places as (
    select
        place_key,
        row_ord
    from pf_staged_places
)

select
    place_key,
    min(row_ord) as first_row_ord
from places
group by place_key
having count(*) > 1
