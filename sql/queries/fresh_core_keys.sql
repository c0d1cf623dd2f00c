-- fresh_core_keys: of the candidate places (the registered frame fresh_core_candidates: place_key,
-- core_key, region, postcode) that have no fresh outcome of their own, those whose core key (the
-- identity without region and postcode) matches an earlier place whose region and postcode were
-- empty or the same, and whose newest successful outcome answering the request was loaded after
-- $cutoff: a newly filled region or postcode changed the key, not the place.
-- Parameters: $signature, $cutoff.

with

candidates as (
    select
        place_key,
        core_key,
        region,
        postcode
    from fresh_core_candidates
),

earlier_places as (
    select distinct
        place_key,
        core_key,
        request ->> 'region' as region,
        request ->> 'postcode' as postcode
    from run_places
    where core_key is not null
),

successful_outcomes as (
    select
        place_key,
        max(outcome_at) as outcome_at
    from place_outcomes
    where success and signature_answers(signature, $signature)
    group by place_key
),

matches as (
    select
        candidates.place_key,
        earlier_places.place_key as outcome_key,
        successful_outcomes.outcome_at
    from candidates
    inner join earlier_places
        on candidates.core_key = earlier_places.core_key
        and candidates.place_key <> earlier_places.place_key
        and (earlier_places.region is null or earlier_places.region = candidates.region)
        and (earlier_places.postcode is null or earlier_places.postcode = candidates.postcode)
    inner join successful_outcomes on earlier_places.place_key = successful_outcomes.place_key
    where successful_outcomes.outcome_at > $cutoff
    qualify row_number() over (
        partition by candidates.place_key
        order by successful_outcomes.outcome_at desc, earlier_places.place_key
    ) = 1
)

select
    place_key,
    outcome_key
from matches
