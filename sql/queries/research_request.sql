-- research_request: what sending one research request needs: its body and the most it can cost.
-- Parameters: $run_id, $request_no.
select
    body,
    credits_max
from research_requests
where run_id = $run_id
    and request_no = $request_no
