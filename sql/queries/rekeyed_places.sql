-- rekeyed_places: of the candidate places (pf_fresh_candidates: place_key, core_key), those
-- whose own key no run has sent but whose core key (identity without region and postcode) an
-- earlier run has: the same places under new keys (a column newly mapped, or mapped
-- differently), whatever their outcomes. The fresh stage warns when most of a file is so. The
-- places of a run still being opened (run_openings) are not sent yet: left out.

with

candidates as (
    select
        place_key,
        core_key
    from pf_fresh_candidates
),

openings as (
    select run_id from run_openings
),

sent_keys as (
    select distinct run_places.place_key
    from run_places
    anti join openings on run_places.run_id = openings.run_id
),

sent_cores as (
    select distinct run_places.core_key
    from run_places
    anti join openings on run_places.run_id = openings.run_id
    where run_places.core_key is not null
),

final as (
    select candidates.place_key
    from candidates
    semi join sent_cores on candidates.core_key = sent_cores.core_key
    anti join sent_keys on candidates.place_key = sent_keys.place_key
)

select distinct place_key from final
