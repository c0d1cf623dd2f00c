-- research_request: what sending one research request needs: its body, the most it can cost,
-- its state, the key usage expected before its latest send and its possible extra credits.
-- Parameters: $run_id, $request_no.
select
    body,
    credits_max,
    state,
    usage_expected,
    possible_extra_credits
from research_requests
where run_id = $run_id
    and request_no = $request_no
