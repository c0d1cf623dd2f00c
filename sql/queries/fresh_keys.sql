-- fresh_keys: of the candidate places (pf_fresh_candidates: a view over the staged places, or
-- a registered frame; row_ord and place_key), those whose newest successful outcome answering
-- the request was loaded after $cutoff, once per key, in the order of its first candidate row.
-- The outcomes are pf_fresh_outcomes: a view of place_outcomes, or (a run's recheck in its
-- hold of the warehouse) those loaded since its lookup.
-- An outcome answers any request it covers (signature_answers): the same signature, an
-- enrichment with existence and open_closed for a validation, an enrichment for an enrichment
-- of a subset of its attributes. Failed outcomes are never fresh: a rerun retries them.
-- Parameters: $signature, $cutoff (now minus the maximum age).

with

candidates as (
    select
        place_key,
        row_ord
    from pf_fresh_candidates
),

successful_outcomes as (
    select
        place_key,
        run_id,
        outcome_at
    from pf_fresh_outcomes
    where success and signature_answers(signature, $signature)
),

first_candidates as (
    select
        place_key,
        min(row_ord) as candidate_ord
    from candidates
    group by place_key
),

newest as (
    select
        first_candidates.candidate_ord,
        successful_outcomes.place_key,
        successful_outcomes.run_id,
        successful_outcomes.outcome_at
    from successful_outcomes
    inner join first_candidates on successful_outcomes.place_key = first_candidates.place_key
    qualify row_number() over (
        partition by successful_outcomes.place_key
        order by successful_outcomes.outcome_at desc, successful_outcomes.run_id desc
    ) = 1
),

final as (
    select
        candidate_ord,
        place_key,
        run_id,
        outcome_at
    from newest
    where outcome_at > $cutoff
)

select
    place_key,
    run_id,
    outcome_at
from final
order by candidate_ord
