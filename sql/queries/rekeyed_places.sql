-- rekeyed_places: of the candidate places (pf_fresh_candidates: place_key, core_key), those
-- whose own key no run has sent but whose core key (identity without region and postcode) an
-- earlier run has: the same places under new keys (a column newly mapped, or mapped
-- differently), whatever their outcomes. The fresh stage warns when most of a file is so.

with

candidates as (
    select
        place_key,
        core_key
    from pf_fresh_candidates
),

sent_keys as (
    select distinct place_key from run_places
),

sent_cores as (
    select distinct core_key from run_places where core_key is not null
),

final as (
    select candidates.place_key
    from candidates
    semi join sent_cores on candidates.core_key = sent_cores.core_key
    anti join sent_keys on candidates.place_key = sent_keys.place_key
)

select distinct place_key from final
