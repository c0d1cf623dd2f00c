-- job_hold_not_settled: a bulk job that ended (loaded, failed, timed out) whose ledger charge
-- plus release is not exactly its hold: credits held and never accounted for, or charged twice.

with

ended_jobs as (
    select
        run_id,
        chunk_no,
        status
    from jobs
    where route = 'job'
        and batch_id is not null
        and status in ('loaded', 'failed')
),

ledger_by_chunk as (
    select
        run_id,
        chunk_no,
        coalesce(sum(credits) filter (where kind = 'hold'), 0) as held,
        coalesce(sum(credits) filter (where kind = 'charge'), 0) as charged,
        coalesce(sum(credits) filter (where kind = 'release'), 0) as released
    from credit_ledger
    group by run_id, chunk_no
),

final as (
    select
        ended_jobs.run_id,
        ended_jobs.chunk_no,
        ended_jobs.status,
        coalesce(ledger_by_chunk.held, 0) as held,
        coalesce(ledger_by_chunk.charged, 0) as charged,
        coalesce(ledger_by_chunk.released, 0) as released
    from ended_jobs
    left join ledger_by_chunk
        on ended_jobs.run_id = ledger_by_chunk.run_id
        and ended_jobs.chunk_no = ledger_by_chunk.chunk_no
    where coalesce(ledger_by_chunk.charged, 0) + coalesce(ledger_by_chunk.released, 0)
        <> coalesce(ledger_by_chunk.held, 0)
)

select * from final
