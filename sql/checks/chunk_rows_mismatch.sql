-- chunk_rows_mismatch: a chunk whose jobs.rows differs from the places planned in it, or
-- planned places whose chunk has no jobs row. A research run's planned places are in
-- run_places too; its requests are research_requests, not jobs, so they are not chunks here.
-- A run still being opened (run_openings) has places and no jobs yet: left out.

with

openings as (
    select run_id from run_openings
),

chunks as (
    select
        run_id,
        chunk_no,
        rows
    from jobs
),

planned_counts as (
    select
        run_places.run_id,
        run_places.chunk_no,
        count(*) as places
    from run_places
    anti join openings on run_places.run_id = openings.run_id
    where run_places.run_id not in (select run_id from runs where mode = 'research')
    group by run_places.run_id, run_places.chunk_no
),

final as (
    select
        coalesce(chunks.run_id, planned_counts.run_id) as run_id,
        coalesce(chunks.chunk_no, planned_counts.chunk_no) as chunk_no,
        chunks.rows,
        planned_counts.places
    from chunks
    full outer join planned_counts
        on chunks.run_id = planned_counts.run_id
        and chunks.chunk_no = planned_counts.chunk_no
    where chunks.rows is distinct from planned_counts.places
)

select * from final
