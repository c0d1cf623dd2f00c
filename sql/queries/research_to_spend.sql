-- research_to_spend: the most a research run's unfinished requests (planned, sent, received)
-- can still cost per the rate card, their places and their count. Parameter: $run_id.
select
    coalesce(sum(credits_max), 0) as to_spend,
    coalesce(sum(places), 0) as places,
    count(*) as requests
from research_requests
where run_id = $run_id
    and state in ('planned', 'sent', 'received')
