-- completed_run_missing_outcomes: a place a completed run sent that has no outcome (success or
-- failure), although its chunk was loaded or never reported ending without results. Places of
-- chunks that failed or timed out, and the unprocessed tail of a cancelled job's partial file,
-- are known to be unanswered and are not reported. A research run's answers are research_answers,
-- not outcomes: its places are not counted here.

with

completed_runs as (
    select run_id
    from runs
    where status = 'completed' and mode <> 'research'
),

planned as (
    select
        run_id,
        place_key,
        chunk_no,
        position
    from run_places
),

chunks as (
    select
        run_id,
        chunk_no,
        status,
        coalesce(rows_loaded, rows) as rows_answered
    from jobs
),

outcomes as (
    select
        run_id,
        place_key
    from place_outcomes
),

expected as (
    select
        planned.*,
        chunks.status as chunk_status
    from planned
    semi join completed_runs on planned.run_id = completed_runs.run_id
    left join chunks
        on planned.run_id = chunks.run_id
        and planned.chunk_no = chunks.chunk_no
    where chunks.status is null
        or (
            chunks.status not in ('failed', 'timed_out')
            and (chunks.status <> 'loaded' or planned.position < chunks.rows_answered)
        )
),

final as (
    select expected.*
    from expected
    anti join outcomes
        on expected.run_id = outcomes.run_id
        and expected.place_key = outcomes.place_key
)

select * from final
