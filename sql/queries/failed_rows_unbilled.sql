-- failed_rows_unbilled: a run's loaded rows that failed (success false) and that its ledger
-- charged nothing for, as the spec's bulk rule says ("failed rows free"): what a service that
-- bills failed rows all the same bills beyond the ledger.

with

outcomes as (
    select success, billable from validations where run_id = $run_id
    union all
    select success, billable from enrichments where run_id = $run_id
),

final as (
    select count(*) as rows
    from outcomes
    where not success and not billable
)

select rows from final
