-- fresh_marked: the deduped places (pf_staged_deduped) as the fresh stage leaves them. A
-- submitted place with a fresh outcome under its own key (pf_fresh_own) or, failing that, an
-- earlier key of its core (pf_fresh_core: place_key, outcome_key) is skipped_fresh; one that
-- another unfinished run is buying (pf_fresh_claimed: place_key, owner_run_id) is claimed; one
-- that failed too often in a row (pf_fresh_held: place_key, failures_in_a_row, last_error) is
-- held_failing. claimed_by names the run a claimed place is left to; outcome_key (added last)
-- is the key whose outcome answers the row, for its duplicates too. The note of a held place
-- says why; that of a place answered under another key names it; that of a claimed place names
-- the run buying it; any other row keeps its note.

with

deduped as (
    select * from pf_staged_deduped
),

own as (
    select distinct place_key from pf_fresh_own
),

core as (
    select
        place_key,
        outcome_key
    from pf_fresh_core
),

claimed as (
    select
        place_key,
        owner_run_id
    from pf_fresh_claimed
),

held as (
    select
        place_key,
        failures_in_a_row,
        last_error
    from pf_fresh_held
),

looked_up as (
    select
        deduped.*,
        own.place_key is not null as fresh_under_own_key,
        core.outcome_key as core_outcome_key,
        claimed.owner_run_id as claim_owner,
        held.failures_in_a_row as held_failures,
        held.last_error as held_last_error
    from deduped
    left join own on deduped.place_key = own.place_key
    left join core on deduped.place_key = core.place_key
    left join claimed on deduped.place_key = claimed.place_key
    left join held on deduped.place_key = held.place_key
),

marked as (
    select
        * exclude (fresh_under_own_key, core_outcome_key) replace (
            case
                when disposition = 'submitted'
                    and (fresh_under_own_key or core_outcome_key is not null)
                    then 'skipped_fresh'
                when disposition = 'submitted' and claim_owner is not null
                    then 'claimed'
                when disposition = 'submitted' and held_failures is not null
                    then 'held_failing'
                else disposition
            end as disposition
        ),
        case when disposition = 'submitted' and claim_owner is not null
            and not (fresh_under_own_key or core_outcome_key is not null)
            then claim_owner end as claimed_by,
        coalesce(core_outcome_key, place_key) as outcome_key
    from looked_up
)

select
    * exclude (held_failures, held_last_error, claim_owner) replace (
        case
            when disposition = 'held_failing'
                then 'failed ' || held_failures || ' times in a row (last: '
                || coalesce(held_last_error, 'no reason given')
                || '); --retry-failed sends it again'
            when disposition = 'skipped_fresh' and outcome_key <> place_key
                then 'fresh outcome of ' || outcome_key
                || ' (the same place before its region or postcode was filled)'
            when disposition = 'claimed'
                then 'bought by unfinished run ' || claim_owner
                || ' (the same answer): waited for, not paid again'
            else note
        end as note
    )
from marked
