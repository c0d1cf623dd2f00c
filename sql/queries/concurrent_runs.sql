-- concurrent_runs: other runs on the same key and service whose time overlaps this run's
-- (from its opening to now): the service's usage over this run then counts theirs too.

with

this_run as (
    select run_id, target, key_hint, created_at
    from runs
    where run_id = $run_id
),

others as (
    select runs.run_id, runs.created_at, coalesce(runs.finished_at, $now) as ended_at
    from runs
    inner join this_run
        on runs.target = this_run.target
        and runs.key_hint is not distinct from this_run.key_hint
        and runs.run_id <> this_run.run_id
    where runs.status <> 'refused'
        and runs.created_at <= $now
        and coalesce(runs.finished_at, $now) >= this_run.created_at
)

select run_id from others order by created_at
