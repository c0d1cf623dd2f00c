-- lines_validate: a validate result file (gzipped JSON Lines, one POIValidateResponse per line
-- in chunk order) as validations rows, each beside the place expected at its line (expected_key).
-- Parameters: $path, $run_id, $chunk_no, $loaded_at, $guard (when true, a line that does not
-- carry the place planned at its position, or a line past the chunk's last place, stops the
-- statement with an error: nothing it would have written is kept). Unknown fields are ignored;
-- enum-like fields stay text.

with

result_lines as (
    select
        *,
        row_number() over () - 1 as line_no
    from read_json(
        $path,
        format = 'newline_delimited',
        records = true,
        compression = 'gzip',
        columns = {
            success: 'boolean',
            id: 'varchar',
            existence_confidence: 'double',
            operational_status: 'struct(status varchar, closure_confidence double, closure_reason varchar)',
            error: 'varchar',
            error_code: 'varchar',
            request_id: 'varchar',
            validation_timestamp: 'varchar'
        }
    )
),

chunk_places as (
    select
        place_key,
        position
    from run_places
    where run_id = $run_id and chunk_no = $chunk_no
),

flattened as (
    select
        line_no::integer as position,
        id as place_key,
        coalesce(success, false) as success,
        existence_confidence,
        operational_status.status as operational_status,
        operational_status.closure_confidence as closure_confidence,
        operational_status.closure_reason as closure_reason,
        error,
        error_code,
        request_id,
        try_cast(validation_timestamp as timestamptz) as validated_at,
        coalesce(success, false)
            and (operational_status is not null or existence_confidence is not null) as billable
    from result_lines
),

final as (
    select
        $run_id as run_id,
        $chunk_no as chunk_no,
        flattened.*,
        $loaded_at as loaded_at,
        chunk_places.place_key as expected_key
    from flattened
    left join chunk_places on flattened.position = chunk_places.position
    where case
        when $guard and flattened.place_key is distinct from chunk_places.place_key
            then error('placeflow load guard: line ' || (flattened.position + 1)
                || ' is not the place planned there')::boolean
        else true
    end
)

select * from final
