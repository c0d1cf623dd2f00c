-- lines_validate: validate result files (gzipped JSON Lines, one POIValidateResponse per line
-- in chunk order) as validations rows, line by line (position: the line's, from 0). The files:
-- sql/load/file_validate.sql once per file, joined by `union all` (a batch's files in one
-- statement). Parameters: those of the files, $run_id, $loaded_at. Unknown fields are ignored;
-- enum-like fields stay text. Every text the server sent is stored capped (server_text).
-- Billable is judged on the spec's fields alone: an operational_status object of only
-- fields the spec never names bills nothing.

with

result_lines as (
    {files}
),

flattened as (
    select
        chunk_no,
        line_no::integer as position,
        id as place_key,
        coalesce(success, false) as success,
        existence_confidence,
        server_text(operational_status.status) as operational_status,
        operational_status.closure_confidence as closure_confidence,
        server_text(operational_status.closure_reason) as closure_reason,
        server_text(error) as error,
        server_text(error_code) as error_code,
        server_text(request_id) as request_id,
        try_cast(validation_timestamp as timestamptz) as validated_at,
        coalesce(success, false)
            and (
                existence_confidence is not null
                or operational_status.status is not null
                or operational_status.closure_confidence is not null
                or operational_status.closure_reason is not null
            ) as billable
    from result_lines
),

final as (
    select
        $run_id as run_id,
        flattened.*,
        $loaded_at as loaded_at
    from flattened
)

select * from final
