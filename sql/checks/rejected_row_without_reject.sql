-- rejected_row_without_reject: an input row marked rejected without its rejects row (the
-- reason), or a rejects row whose input row is not marked rejected.

with

rejected_rows as (
    select
        run_id,
        row_ord
    from run_rows
    where disposition = 'rejected'
),

reject_reasons as (
    select
        run_id,
        row_ord
    from rejects
),

rows_without_reason as (
    select
        run_id,
        row_ord,
        'rejected row without a reject' as problem
    from rejected_rows
    anti join reject_reasons using (run_id, row_ord)
),

reasons_without_row as (
    select
        run_id,
        row_ord,
        'reject without a rejected row' as problem
    from reject_reasons
    anti join rejected_rows using (run_id, row_ord)
),

final as (
    select * from rows_without_reason
    union all
    select * from reasons_without_row
)

select * from final
