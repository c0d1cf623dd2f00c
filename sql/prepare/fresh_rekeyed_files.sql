-- fresh_rekeyed_files: each input file most of whose places to send (pf_fresh_candidates) were
-- run before under other keys, in the order of the files' first rows: how many places it
-- sends, how many were re-keyed, and how many of those an earlier key's fresh outcome answers.
-- A place was re-keyed when an earlier key of its core was run (pf_fresh_rekeyed; answered by
-- pf_fresh_core), or when the dedupe matched it to a place the warehouse knows (its key is no
-- row's own key, pf_fresh_own_keys; answered when that key is fresh, pf_fresh_own). The
-- fresh stage warns of each.

with

candidates as (
    select
        row_ord,
        place_key,
        source_file
    from pf_fresh_candidates
),

own_keys as (
    select place_key from pf_fresh_own_keys
),

known as (
    select distinct place_key from candidates
    anti join own_keys using (place_key)
),

rekeyed as (
    select place_key from pf_fresh_rekeyed
    union
    select place_key from known
),

answered as (
    select place_key from pf_fresh_core
    union
    select place_key from pf_fresh_own semi join known using (place_key)
),

flagged as (
    select
        candidates.row_ord,
        candidates.source_file,
        rekeyed.place_key is not null as moved,
        answered.place_key is not null as used
    from candidates
    left join rekeyed on candidates.place_key = rekeyed.place_key
    left join answered on candidates.place_key = answered.place_key
),

per_file as (
    select
        source_file,
        min(row_ord) as first_row_ord,
        count(*) as places,
        count(*) filter (where moved) as moved,
        count(*) filter (where moved and used) as used
    from flagged
    group by source_file
)

select
    source_file,
    places,
    moved,
    used
from per_file
where moved * 2 > places
order by first_row_ord
