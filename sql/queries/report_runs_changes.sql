-- report_runs_changes: how many changes each of the given runs detected. Run only when the
-- place_changes table exists. Parameters: $run_ids (a list).

select
    run_id,
    count(*) as changes
from place_changes
where list_contains($run_ids, run_id)
group by run_id
