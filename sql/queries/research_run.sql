-- research_run: a research run's row as its summary shows it. Parameter: $run_id.
select
    status,
    target,
    rows_read,
    rejected,
    duplicates,
    skipped_fresh,
    submitted,
    credits_estimated,
    usage_before,
    usage_after,
    message
from runs
where run_id = $run_id
