-- report_runs: the newest $limit runs with what an analyst looks at first: status, rows,
-- outcomes, credits and duration. Parameters: $limit.

with

recent_runs as (
    select * from runs
    order by created_at desc, run_id desc
    limit $limit
),

credits as (
    select * from run_credits
),

final as (
    select
        recent_runs.run_id,
        recent_runs.created_at,
        case  -- a run closed before 019 knew all_rejected
            when recent_runs.status = 'completed' and recent_runs.rows_read > 0
                and recent_runs.rejected = recent_runs.rows_read
                then 'all_rejected'
            else recent_runs.status
        end as status,
        recent_runs.mode,
        recent_runs.rows_read,
        recent_runs.rejected,
        recent_runs.duplicates,
        recent_runs.skipped_fresh,
        recent_runs.submitted,
        recent_runs.succeeded,
        recent_runs.failed,
        credits.estimated as credits_estimated,
        credits.charged as credits_charged,
        credits.usage_delta,
        round(epoch(recent_runs.finished_at) - epoch(recent_runs.created_at), 1)
            as duration_s,
        recent_runs.message
    from recent_runs
    left join credits on recent_runs.run_id = credits.run_id
)

select * from final
order by created_at desc, run_id desc
