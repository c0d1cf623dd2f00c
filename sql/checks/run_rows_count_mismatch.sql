-- run_rows_count_mismatch: a completed run whose run_rows do not account for every row read
-- (each input row gets exactly one disposition, row_ord 0..rows_read-1).

with

completed_runs as (
    select
        run_id,
        rows_read
    from runs
    where status = 'completed'
),

row_counts as (
    select
        run_id,
        count(*) as rows_recorded,
        count(distinct row_ord) as distinct_ords,
        min(row_ord) as first_ord,
        max(row_ord) as last_ord
    from run_rows
    group by run_id
),

final as (
    select
        completed_runs.run_id,
        completed_runs.rows_read,
        coalesce(row_counts.rows_recorded, 0) as rows_recorded
    from completed_runs
    left join row_counts on completed_runs.run_id = row_counts.run_id
    where coalesce(row_counts.rows_recorded, 0) <> completed_runs.rows_read
        or row_counts.distinct_ords <> row_counts.rows_recorded
        or row_counts.first_ord <> 0
        or row_counts.last_ord <> completed_runs.rows_read - 1
)

select * from final
