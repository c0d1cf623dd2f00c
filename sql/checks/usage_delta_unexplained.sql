-- usage_delta_unexplained: a completed run whose service usage delta is not what the ledger
-- charged (up to possible_extra_credits more). Another user of the same key during the run
-- also shows here: the service's count is the one that is billed.

with

credits as (
    select
        run_id,
        status,
        usage_delta,
        charged,
        ledger_vs_usage,
        possible_extra_credits
    from run_credits
),

final as (
    select *
    from credits
    where status = 'completed'
        and usage_delta is not null
        and (ledger_vs_usage < 0 or ledger_vs_usage > possible_extra_credits)
)

select * from final
