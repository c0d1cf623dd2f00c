-- report_research_requests: each request of a research run with its moments, in seconds from the
-- run's opening, and its credits per the ledger, in report_jobs' shape (a request is a research
-- run's chunk: route research, its state as status, its places as rows), so the timeline, the
-- per-chunk credits and their table draw it as they draw a run's jobs; possible is what the
-- request may have been billed without its answer. Parameters: $run_id, $limit.

with

run_start as (
    select created_at
    from runs
    where run_id = $run_id
),

requests as (
    select * from research_requests
    where run_id = $run_id
),

ledger as (
    select
        chunk_no,
        sum(credits) filter (where kind = 'charge') as charged,
        sum(credits) filter (where kind = 'possible') as possible
    from credit_ledger
    where run_id = $run_id
    group by chunk_no
),

final as (
    select
        requests.request_no as chunk_no,
        'research' as route,
        requests.state as status,
        requests.places as rows,
        case when requests.state = 'answered' then requests.places else 0 end as rows_loaded,
        requests.request_id as batch_id,
        requests.error_code,
        epoch(requests.planned_at) - epoch(run_start.created_at) as planned_s,
        epoch(requests.sent_at) - epoch(run_start.created_at) as submitted_s,
        epoch(requests.answered_at) - epoch(run_start.created_at) as finished_s,
        epoch(requests.answered_at) - epoch(run_start.created_at) as loaded_s,
        0 as held,
        coalesce(ledger.charged, 0) as charged,
        0 as released,
        coalesce(ledger.possible, 0) as possible
    from requests
    cross join run_start
    left join ledger on requests.request_no = ledger.chunk_no
)

select * from final
order by chunk_no
limit $limit
