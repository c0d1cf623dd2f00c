-- research_first_request: a research run's first request as planned (checked against the
-- service's estimate_only answer before anything is spent). Parameter: $run_id.
select
    request_no,
    places,
    body,
    body_sha256,
    credits_max
from research_requests
where run_id = $run_id
order by request_no
limit 1
