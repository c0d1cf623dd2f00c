-- report_jobs: each chunk of the run (bulk job or synchronous batch) with its moments, in
-- seconds from the run's opening, and its credits per the ledger: the timeline and the
-- per-job credits. Parameters: $run_id, $limit (most chunks shown, first ones first).

with

run_start as (
    select created_at
    from runs
    where run_id = $run_id
),

chunks as (
    select * from jobs
    where run_id = $run_id
),

ledger as (
    select
        chunk_no,
        sum(credits) filter (where kind = 'hold') as held,
        sum(credits) filter (where kind = 'charge') as charged,
        sum(credits) filter (where kind = 'release') as released
    from credit_ledger
    where run_id = $run_id
    group by chunk_no
),

final as (
    select
        chunks.chunk_no,
        chunks.route,
        chunks.status,
        chunks.rows,
        chunks.rows_loaded,
        chunks.batch_id,
        chunks.error_code,
        epoch(chunks.created_at) - epoch(run_start.created_at) as planned_s,
        epoch(chunks.submitted_at) - epoch(run_start.created_at) as submitted_s,
        epoch(chunks.finished_at) - epoch(run_start.created_at) as finished_s,
        epoch(chunks.loaded_at) - epoch(run_start.created_at) as loaded_s,
        coalesce(ledger.held, 0) as held,
        coalesce(ledger.charged, 0) as charged,
        coalesce(ledger.released, 0) as released
    from chunks
    cross join run_start
    left join ledger on chunks.chunk_no = ledger.chunk_no
)

select * from final
order by chunk_no
limit $limit
