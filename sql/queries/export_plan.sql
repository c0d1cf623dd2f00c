-- export_plan: how many rows of a table lie above a watermark, and the highest cursor value
-- among them. {table}, {cursor} and {lower} are filled in by placeflow.exporters.export (checked names).
with

source_rows as (
    select ({cursor}) as cursor_value from {table}
),

pending as (
    select cursor_value from source_rows where {lower}
)

select count(*) as rows, max(cursor_value) as upper from pending
