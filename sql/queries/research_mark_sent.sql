-- research_mark_sent: a research request is about to be POSTed (written ahead, committed
-- before the POST). Parameters: $run_id, $request_no, $sent_at, $usage_expected, $max_credits.
update research_requests set
    state = 'sent',
    attempts = attempts + 1,
    sent_at = $sent_at,
    usage_expected = $usage_expected,
    max_credits_sent = $max_credits
where run_id = $run_id
    and request_no = $request_no
