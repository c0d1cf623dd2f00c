-- insert: record the changes of run $run_id (sql/changes/detect.sql, read as the temp table
-- detected_changes) that place_changes does not hold yet, so recording twice adds nothing.
-- Parameters: $detected_at.

insert into place_changes by name
select
    detected.run_id,
    detected.place_key,
    detected.field,
    detected.kind,
    detected.old_value,
    detected.new_value,
    detected.old_run_id,
    detected.outcome_at,
    $detected_at as detected_at
from detected_changes as detected
anti join place_changes as recorded
    on detected.run_id = recorded.run_id
    and detected.place_key = recorded.place_key
    and detected.field = recorded.field
