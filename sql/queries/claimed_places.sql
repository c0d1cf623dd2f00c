-- claimed_places: of the candidate places (pf_fresh_candidates: the places a run is about to
-- buy), those another unfinished run (running or interrupted) is buying with a request whose
-- answer answers $signature (signature_answers), in a chunk not yet settled (not loaded, not
-- failed): that run's answer is waited for instead of paying again. One row per place, its
-- owner the oldest such run. Runs are matched on the place_key (the same normalised place).
-- Parameters: $signature.

with

candidates as (
    select distinct place_key from pf_fresh_candidates
),

open_runs as (
    select
        run_id,
        created_at
    from runs
    where status in ('running', 'interrupted')
        and signature_answers(signature, $signature)
),

unsettled as (
    select
        jobs.run_id,
        jobs.chunk_no
    from jobs
    inner join open_runs on jobs.run_id = open_runs.run_id
    where jobs.status not in ('loaded', 'failed')
),

claims as (
    select
        run_places.place_key,
        open_runs.run_id,
        open_runs.created_at
    from run_places
    inner join unsettled
        on run_places.run_id = unsettled.run_id
        and run_places.chunk_no = unsettled.chunk_no
    inner join open_runs on run_places.run_id = open_runs.run_id
    inner join candidates on run_places.place_key = candidates.place_key
)

select
    place_key,
    run_id as owner_run_id
from claims
qualify row_number() over (partition by place_key order by created_at, run_id) = 1
