-- file_validate: one validate result file's lines (gzipped JSON Lines, in chunk order), each with
-- its chunk and its line number (from 0), for sql/load/lines_validate.sql. Parameters: $path,
-- $chunk_no (a batch of files names them $path_N, $chunk_N: `placeflow.pipeline.load`).
-- Each file is numbered by a scan of its own, in the file's order.

select
    *,
    $chunk_no as chunk_no,
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
