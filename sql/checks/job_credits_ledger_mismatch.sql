-- job_credits_ledger_mismatch: a chunk whose credits_held, credits_charged or credits_released
-- in jobs disagree with its ledger entries. A research run's entries belong to its requests
-- (research_requests), not to jobs: not counted here.

with

chunk_credits as (
    select
        run_id,
        chunk_no,
        coalesce(credits_held, 0) as held,
        coalesce(credits_charged, 0) as charged,
        coalesce(credits_released, 0) as released
    from jobs
),

ledger_by_chunk as (
    select
        run_id,
        chunk_no,
        coalesce(sum(credits) filter (where kind = 'hold'), 0) as held,
        coalesce(sum(credits) filter (where kind = 'charge'), 0) as charged,
        coalesce(sum(credits) filter (where kind = 'release'), 0) as released
    from credit_ledger
    where run_id not in (select run_id from runs where mode = 'research')
    group by run_id, chunk_no
),

final as (
    select
        coalesce(chunk_credits.run_id, ledger_by_chunk.run_id) as run_id,
        coalesce(chunk_credits.chunk_no, ledger_by_chunk.chunk_no) as chunk_no,
        chunk_credits.held,
        ledger_by_chunk.held as ledger_held,
        chunk_credits.charged,
        ledger_by_chunk.charged as ledger_charged,
        chunk_credits.released,
        ledger_by_chunk.released as ledger_released
    from chunk_credits
    full outer join ledger_by_chunk
        on chunk_credits.run_id = ledger_by_chunk.run_id
        and chunk_credits.chunk_no = ledger_by_chunk.chunk_no
    where coalesce(chunk_credits.held, 0) <> coalesce(ledger_by_chunk.held, 0)
        or coalesce(chunk_credits.charged, 0) <> coalesce(ledger_by_chunk.charged, 0)
        or coalesce(chunk_credits.released, 0) <> coalesce(ledger_by_chunk.released, 0)
)

select * from final
