-- run_rows_rejected: the run_rows of the run being opened that normalize rejected (its run_id
-- is added by the caller), disposition rejected, the reason as their note (pf_staged_rejects).

select
    row_ord,
    source_file,
    source_row,
    source_id,
    null::varchar as place_key,
    'rejected' as disposition,
    reason as note
from pf_staged_rejects
