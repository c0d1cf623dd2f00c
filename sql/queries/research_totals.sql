-- research_totals: per research run, requests by state, places answered and errored, the
-- credits charged, possibly charged and adjusted per the ledger, and the most its requests can
-- have been billed (each send at most its credits_max). Parameter: $run_id.

with

requests as (
    select
        state,
        credits_max,
        attempts,
        possible_extra_credits
    from research_requests
    where run_id = $run_id
),

answers as (
    select
        place_key,
        row_status
    from research_answers
    where run_id = $run_id
),

ledger as (
    select
        kind,
        credits
    from credit_ledger
    where run_id = $run_id
),

final as (
    select
        (select count(*) from requests) as requests,
        (select count(*) from requests where state = 'answered') as answered_requests,
        (select count(*) from requests where state in ('planned', 'sent')) as open_requests,
        (select count(*) from requests where state in ('lost', 'uncertain')) as doubtful_requests,
        (select count(distinct place_key) from answers where row_status <> 'error') as answered,
        (select count(distinct place_key) from answers where row_status = 'error') as errored,
        (select coalesce(sum(credits), 0) from ledger where kind = 'charge') as charged,
        (select coalesce(sum(credits), 0) from ledger where kind = 'possible') as possible,
        (select coalesce(sum(credits), 0) from ledger where kind = 'adjustment') as adjusted,
        (select coalesce(sum(credits_max * greatest(attempts, 1)), 0) from requests) as most
)

select * from final
