-- loaded_chunk_outcome_count_mismatch: a loaded chunk whose outcomes in the warehouse are not
-- the rows its load recorded (rows_loaded; all the chunk's rows unless the file was partial).

with

loaded_chunks as (
    select
        run_id,
        chunk_no,
        rows,
        rows_loaded,
        error
    from jobs
    where status = 'loaded'
),

outcome_counts as (
    select
        run_id,
        chunk_no,
        count(*) as outcomes
    from place_outcomes
    group by run_id, chunk_no
),

final as (
    select
        loaded_chunks.run_id,
        loaded_chunks.chunk_no,
        loaded_chunks.rows,
        loaded_chunks.rows_loaded,
        coalesce(outcome_counts.outcomes, 0) as outcomes
    from loaded_chunks
    left join outcome_counts
        on loaded_chunks.run_id = outcome_counts.run_id
        and loaded_chunks.chunk_no = outcome_counts.chunk_no
    where loaded_chunks.rows_loaded is distinct from coalesce(outcome_counts.outcomes, 0)
        or (loaded_chunks.rows_loaded <> loaded_chunks.rows and loaded_chunks.error is null)
)

select * from final
