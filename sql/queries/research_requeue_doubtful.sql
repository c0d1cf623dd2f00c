-- research_requeue_doubtful: --resend-uncertain puts a research run's lost and uncertain
-- requests back in the plan. Parameter: $run_id.
update research_requests set state = 'planned'
where run_id = $run_id
    and state in ('lost', 'uncertain')
