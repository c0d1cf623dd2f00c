-- disposition_count_mismatch: a completed run whose counters (rejected, duplicates,
-- skipped_fresh, submitted) disagree with its run_rows.

with

completed_runs as (
    select
        run_id,
        rejected,
        duplicates,
        skipped_fresh,
        submitted
    from runs
    where status = 'completed'
),

dispositions as (
    select
        run_id,
        count(*) filter (where disposition = 'rejected') as rejected,
        count(*) filter (where disposition = 'duplicate') as duplicates,
        count(*) filter (where disposition = 'skipped_fresh') as skipped_fresh,
        count(distinct place_key) filter (where disposition = 'submitted') as submitted
    from run_rows
    group by run_id
),

final as (
    select
        completed_runs.run_id,
        completed_runs.rejected,
        dispositions.rejected as rejected_rows,
        completed_runs.duplicates,
        dispositions.duplicates as duplicate_rows,
        completed_runs.skipped_fresh,
        dispositions.skipped_fresh as skipped_fresh_rows,
        completed_runs.submitted,
        dispositions.submitted as submitted_places
    from completed_runs
    left join dispositions on completed_runs.run_id = dispositions.run_id
    where completed_runs.rejected <> coalesce(dispositions.rejected, 0)
        or completed_runs.duplicates <> coalesce(dispositions.duplicates, 0)
        or completed_runs.skipped_fresh <> coalesce(dispositions.skipped_fresh, 0)
        or completed_runs.submitted <> coalesce(dispositions.submitted, 0)
)

select * from final
