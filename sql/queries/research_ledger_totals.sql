-- research_ledger_totals: the credits a research run was charged and may have been charged
-- (lost answers the key's usage could not rule out). Parameter: $run_id.
select
    coalesce(sum(credits) filter (where kind = 'charge'), 0) as charged,
    coalesce(sum(credits) filter (where kind = 'possible'), 0) as possible
from credit_ledger
where run_id = $run_id
