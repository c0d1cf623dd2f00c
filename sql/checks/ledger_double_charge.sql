-- ledger_double_charge: a job or request (ref) charged more than once in a run.

with

charges as (
    select
        run_id,
        ref,
        credits
    from credit_ledger
    where kind = 'charge'
),

final as (
    select
        run_id,
        ref,
        count(*) as charges,
        sum(credits) as credits
    from charges
    group by run_id, ref
    having count(*) > 1
)

select * from final
