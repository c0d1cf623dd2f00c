-- research_states: a research run's requests in the given states ($states, a list), in order.
-- Parameters: $run_id, $states.
select
    request_no,
    state
from research_requests
where run_id = $run_id
    and list_contains($states, state)
order by request_no
