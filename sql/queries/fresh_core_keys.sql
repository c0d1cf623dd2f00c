-- fresh_core_keys: of the candidate places (pf_fresh_candidates: place_key, core_key, region,
-- postcode) that have no fresh outcome of their own, those whose core key (the identity
-- without region and postcode) matches an earlier place whose region and postcode were empty
-- or the same, and whose newest successful outcome answering the request was loaded after
-- $cutoff: a newly filled region or postcode changed the key, not the place. Once per key,
-- with outcome_key the earlier place whose outcome answers it (the newest, then the least key).
-- The outcomes are pf_fresh_outcomes (see fresh_keys.sql). The places of a run still being
-- opened (run_openings) are not sent places yet. Parameters: $signature, $cutoff.

with

candidates as (
    select
        place_key,
        core_key,
        region,
        postcode
    from pf_fresh_candidates
),

openings as (
    select run_id from run_openings
),

sent_places as (
    select
        run_places.place_key,
        run_places.core_key,
        run_places.request
    from run_places
    anti join openings on run_places.run_id = openings.run_id
    where run_places.core_key is not null
),

successful_outcomes as (
    select
        place_key,
        max(outcome_at) as outcome_at
    from pf_fresh_outcomes
    where success and signature_answers(signature, $signature)
    group by place_key
),

fresh_outcomes as (
    select place_key from successful_outcomes where outcome_at > $cutoff
),

not_fresh_themselves as (
    select * from candidates
    anti join fresh_outcomes on candidates.place_key = fresh_outcomes.place_key
),

-- the requests parsed are those of earlier places of these candidates' cores alone: a
-- rerun's places are mostly fresh themselves, and parsing every request is most of the cost
earlier_places as (
    select distinct
        sent_places.place_key,
        sent_places.core_key,
        sent_places.request ->> 'region' as region,
        sent_places.request ->> 'postcode' as postcode
    from sent_places
    semi join not_fresh_themselves on sent_places.core_key = not_fresh_themselves.core_key
),

matches as (
    select
        not_fresh_themselves.place_key,
        earlier_places.place_key as outcome_key,
        successful_outcomes.outcome_at
    from not_fresh_themselves
    inner join earlier_places
        on not_fresh_themselves.core_key = earlier_places.core_key
        and not_fresh_themselves.place_key <> earlier_places.place_key
        and (
            earlier_places.region is null
            or earlier_places.region = not_fresh_themselves.region
        )
        and (
            earlier_places.postcode is null
            or earlier_places.postcode = not_fresh_themselves.postcode
        )
    inner join successful_outcomes on earlier_places.place_key = successful_outcomes.place_key
    where successful_outcomes.outcome_at > $cutoff
    qualify row_number() over (
        partition by not_fresh_themselves.place_key
        order by successful_outcomes.outcome_at desc, earlier_places.place_key
    ) = 1
)

select
    place_key,
    outcome_key
from matches
