-- fresh_candidates: the places the fresh stage looks up (the view pf_fresh_candidates): the
-- submitted rows of the deduped places (pf_staged_deduped), with the columns the freshness
-- queries read. Duplicates are answered by the place they repeat, so are never looked up.

with

deduped as (
    select
        row_ord,
        place_key,
        core_key,
        region,
        postcode,
        source_file,
        disposition
    from pf_staged_deduped
)

select
    row_ord,
    place_key,
    core_key,
    region,
    postcode,
    source_file
from deduped
where disposition = 'submitted'
