-- file_enrich: one enrich result file's lines (gzipped JSON Lines, in chunk order), each with
-- its chunk and its line number (from 0), for sql/load/lines_enrich.sql. Parameters: $path,
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
        attributes: 'struct(
            opening_hours struct(value json, confidence varchar, as_of varchar, status varchar),
            phone struct(value json, confidence varchar, as_of varchar, status varchar),
            website struct(value json, confidence varchar, as_of varchar, status varchar),
            facebook struct(value json, confidence varchar, as_of varchar, status varchar),
            instagram struct(value json, confidence varchar, as_of varchar, status varchar),
            tiktok struct(value json, confidence varchar, as_of varchar, status varchar),
            email struct(value json, confidence varchar, as_of varchar, status varchar)
        )',
        status: 'json',
        operational_status: 'struct(status varchar, closure_confidence double, closure_reason varchar)',
        place_summary: 'varchar',
        enrichment_timestamp: 'varchar',
        error: 'varchar',
        error_code: 'varchar',
        request_id: 'varchar'
    }
)
