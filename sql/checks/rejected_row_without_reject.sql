-- rejected_row_without_reject: an input row marked rejected without its rejects row (the
-- reason), or a rejects row whose input row is not marked rejected. A run still being opened
-- (run_openings) may have one written before the other: left out.

with

openings as (
    select run_id from run_openings
),

rejected_rows as (
    select
        run_rows.run_id,
        run_rows.row_ord
    from run_rows
    anti join openings on run_rows.run_id = openings.run_id
    where run_rows.disposition = 'rejected'
),

reject_reasons as (
    select
        rejects.run_id,
        rejects.row_ord
    from rejects
    anti join openings on rejects.run_id = openings.run_id
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
