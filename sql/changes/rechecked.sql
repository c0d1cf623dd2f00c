-- rechecked: how many places of run $1 have a successful outcome from another run (0: the run
-- looked at every one of its places for the first time, so it can have changed nothing).

with

run_places_of_run as (
    select distinct place_key from run_places where run_id = $1
),

earlier as (
    select place_key from validations where run_id <> $1 and success
    union all
    select place_key from enrichments where run_id <> $1 and success
)

select count(*)
from run_places_of_run
where place_key in (select place_key from earlier)
