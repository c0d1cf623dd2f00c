-- run_outcome_count_mismatch: a completed run whose succeeded and failed counters disagree
-- with its outcomes (a research run's count its answers, research_answers: not counted here).

with

completed_runs as (
    select
        run_id,
        succeeded,
        failed
    from runs
    where status = 'completed' and mode <> 'research'
),

outcome_counts as (
    select
        run_id,
        count(*) filter (where success) as succeeded,
        count(*) filter (where not success) as failed
    from place_outcomes
    group by run_id
),

final as (
    select
        completed_runs.run_id,
        completed_runs.succeeded,
        outcome_counts.succeeded as succeeded_outcomes,
        completed_runs.failed,
        outcome_counts.failed as failed_outcomes
    from completed_runs
    left join outcome_counts on completed_runs.run_id = outcome_counts.run_id
    where completed_runs.succeeded <> coalesce(outcome_counts.succeeded, 0)
        or completed_runs.failed <> coalesce(outcome_counts.failed, 0)
)

select * from final
