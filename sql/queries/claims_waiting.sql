-- claims_waiting: the places run $run_id left to other unfinished runs (run_rows claimed), by
-- the run buying them: how many, how many that run has answered since (an outcome of it for
-- the place), how many it will not answer (its chunk of the place ended without one), how many
-- are still to come, and that run's status.

with

claimed as (
    select
        place_key,
        claimed_by
    from run_rows
    where run_id = $run_id and disposition = 'claimed'
),

answered as (
    select distinct
        claimed.place_key,
        claimed.claimed_by
    from claimed
    inner join place_outcomes
        on place_outcomes.run_id = claimed.claimed_by
        and place_outcomes.place_key = claimed.place_key
),

ended as (
    select distinct
        claimed.place_key,
        claimed.claimed_by
    from claimed
    inner join run_places
        on run_places.run_id = claimed.claimed_by
        and run_places.place_key = claimed.place_key
    inner join jobs
        on jobs.run_id = run_places.run_id
        and jobs.chunk_no = run_places.chunk_no
    where jobs.status in ('loaded', 'failed')
),

final as (
    select
        claimed.claimed_by as owner_run_id,
        count(*) as places,
        count(answered.place_key) as answered,
        count(*) filter (where answered.place_key is null and ended.place_key is not null)
            as unanswered,
        count(*) filter (where answered.place_key is null and ended.place_key is null)
            as waiting
    from claimed
    left join answered
        on claimed.place_key = answered.place_key and claimed.claimed_by = answered.claimed_by
    left join ended
        on claimed.place_key = ended.place_key and claimed.claimed_by = ended.claimed_by
    group by claimed.claimed_by
)

select
    final.owner_run_id,
    final.places,
    final.answered,
    final.unanswered,
    final.waiting,
    runs.status as owner_status
from final
left join runs on final.owner_run_id = runs.run_id
order by final.owner_run_id
