-- completed_run_with_open_chunks: a run marked completed while one of its chunks is still
-- planned, submitted, or has results that were never loaded.

with

completed_runs as (
    select run_id
    from runs
    where status = 'completed'
),

open_chunks as (
    select
        run_id,
        chunk_no,
        status
    from jobs
    where status in ('planned', 'submitted', 'completed', 'cancelled')
),

final as (
    select open_chunks.*
    from open_chunks
    semi join completed_runs on open_chunks.run_id = completed_runs.run_id
)

select * from final
