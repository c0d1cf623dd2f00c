-- usage_delta_unexplained: a completed run whose service usage delta is not what the ledger
-- charged (up to possible_extra_credits more), although no other run used the same key and
-- service while it ran (runs that overlap share the usage: their deltas count each other's
-- spend, and placeflow does not adjust them; sql/queries/concurrent_runs.sql). Another user of
-- the key outside this warehouse also shows here: the service's count is the one that is billed.

with

credits as (
    select
        run_id,
        status,
        usage_delta,
        charged,
        ledger_vs_usage,
        possible_extra_credits
    from run_credits
),

spans as (
    select
        run_id,
        target,
        key_hint,
        created_at,
        finished_at
    from runs
    where status <> 'refused'
),

overlapped as (
    select distinct this_run.run_id
    from spans as this_run
    inner join spans as other_run
        on other_run.target = this_run.target
        and other_run.key_hint is not distinct from this_run.key_hint
        and other_run.run_id <> this_run.run_id
        and other_run.created_at <= coalesce(this_run.finished_at, now())
        and coalesce(other_run.finished_at, now()) >= this_run.created_at
),

final as (
    select credits.*
    from credits
    anti join overlapped on credits.run_id = overlapped.run_id
    where credits.status = 'completed'
        and credits.usage_delta is not null
        and (
            credits.ledger_vs_usage < 0
            or credits.ledger_vs_usage > credits.possible_extra_credits
        )
)

select * from final
