-- run_rows_rejected: the rows of the run being opened ($run_id) that normalize rejected
-- (pf_staged_rejects), disposition rejected, the reason as their note.

insert into run_rows by name
select
    $run_id as run_id,
    row_ord,
    source_file,
    source_row,
    source_id,
    null as place_key,
    'rejected' as disposition,
    reason as note
from pf_staged_rejects
