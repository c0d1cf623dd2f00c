-- claimed_places: of the candidate places (pf_fresh_candidates: the places a run is about to
-- buy), those another unfinished run is buying with a request whose answer answers $signature
-- (place_claims, signature_answers): that run's answer is waited for instead of paying again.
-- One row per place, its owner the oldest such run. Parameters: $signature.

with

candidates as (
    select distinct place_key from pf_fresh_candidates
),

claims as (
    select
        place_claims.place_key,
        place_claims.run_id,
        place_claims.created_at
    from place_claims
    inner join candidates on place_claims.place_key = candidates.place_key
    where signature_answers(place_claims.signature, $signature)
)

select
    place_key,
    run_id as owner_run_id
from claims
qualify row_number() over (partition by place_key order by created_at, run_id) = 1
