-- report_run: the run's own record and its credits, one row: what the report's header,
-- funnel and credit sections show. A research run's chunks are its requests (failed: lost or
-- uncertain; a request refused or not yet sent has not failed). Parameters: $run_id.

with

run_facts as (
    select * from runs
    where run_id = $run_id
),

credits as (
    select * from run_credits
    where run_id = $run_id
),

chunks as (
    select
        route,
        status in ('failed', 'timed_out', 'cancelled') as failed
    from jobs
    where run_id = $run_id
    union all
    select
        'research' as route,
        state in ('lost', 'uncertain') as failed
    from research_requests
    where run_id = $run_id
),

job_counts as (
    select
        count(*) as chunks,
        count(*) filter (where route = 'job') as jobs,
        count(*) filter (where failed) as chunks_failed
    from chunks
),

final as (
    select
        run_facts.run_id,
        run_facts.status,
        run_facts.mode,
        run_facts.attributes,
        run_facts.target,
        run_facts.inputs,
        run_facts.created_at,
        run_facts.finished_at,
        epoch(run_facts.finished_at) - epoch(run_facts.created_at) as seconds,
        run_facts.rows_read,
        run_facts.rejected,
        run_facts.duplicates,
        run_facts.skipped_fresh,
        run_facts.submitted,
        run_facts.succeeded,
        run_facts.failed,
        run_facts.message,
        credits.estimated,
        credits.held,
        credits.charged,
        credits.released,
        credits.usage_delta,
        credits.ledger_vs_usage,
        credits.possible_extra_credits,
        job_counts.chunks,
        job_counts.jobs,
        job_counts.chunks_failed
    from run_facts
    left join credits on run_facts.run_id = credits.run_id
    cross join job_counts
)

select * from final
