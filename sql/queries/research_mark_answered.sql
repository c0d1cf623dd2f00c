-- research_mark_answered: a research request's answer is loaded (its stored raw answer is
-- cleared). Parameters: $run_id, $request_no, $request_id, $stopped_reason,
-- $estimated_credits, $credits_charged, $answered_at.
update research_requests set
    state = 'answered',
    request_id = $request_id,
    stopped_reason = $stopped_reason,
    estimated_credits = $estimated_credits,
    credits_charged = $credits_charged,
    answered_at = $answered_at,
    error = null,
    error_code = null,
    response = null
where run_id = $run_id
    and request_no = $request_no
