-- budget_spent: what each run spent of a period [$start, $end), for the budgets
-- (placeflow.state.budgets): its charges and adjustments recorded in the period (charged), its
-- research requests that may have been billed (possible), the holds of its chunks not yet
-- charged or released (outstanding), and, for a run still spending (running or planned), the
-- rest of its estimate not yet charged or released (reserve: taken when it was opened, so two
-- processes cannot pass a budget together). kind is what a budget's --for names: research (mode
-- research), refresh (its input is the warehouse) or run. Runs with nothing in the period and
-- nothing still held are left out. Parameters: $start, $end.

with

ledger as (
    select
        run_id,
        chunk_no,
        kind,
        credits,
        recorded_at >= $start and recorded_at < $end as in_period
    from credit_ledger
),

per_chunk as (
    select
        run_id,
        chunk_no,
        sum(credits) filter (where kind = 'hold') as held,
        coalesce(sum(credits) filter (where kind in ('charge', 'release')), 0) as settled
    from ledger
    group by run_id, chunk_no
),

outstanding as (
    select
        run_id,
        sum(greatest(held - settled, 0)) as outstanding
    from per_chunk
    where held is not null
    group by run_id
),

per_run as (
    select
        run_id,
        coalesce(sum(credits) filter (where kind in ('charge', 'adjustment') and in_period), 0)
            as charged,
        coalesce(sum(credits) filter (where kind = 'possible' and in_period), 0) as possible,
        coalesce(sum(credits) filter (where kind in ('charge', 'release', 'possible')), 0)
            as spent_ever
    from ledger
    group by run_id
),

final as (
    select
        runs.run_id,
        case
            when runs.mode = 'research' then 'research'
            when runs.inputs like '["warehouse:%' then 'refresh'
            else 'run'
        end as kind,
        runs.status,
        coalesce(per_run.charged, 0) as charged,
        coalesce(per_run.possible, 0) as possible,
        coalesce(outstanding.outstanding, 0) as outstanding,
        case
            when runs.status in ('running', 'planned')
                then greatest(
                    coalesce(runs.credits_estimated, 0) - coalesce(per_run.spent_ever, 0), 0
                )
            else 0
        end as reserve
    from runs
    left join per_run on runs.run_id = per_run.run_id
    left join outstanding on runs.run_id = outstanding.run_id
)

select
    run_id,
    kind,
    status,
    charged,
    possible,
    outstanding,
    reserve
from final
where charged <> 0 or possible > 0 or outstanding > 0 or reserve > 0
order by run_id
