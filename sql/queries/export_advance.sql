-- export_advance: move a destination's watermark for one table after the destination committed.
insert into export_state as state (
    destination, table_name, watermark, exports, rows_exported, last_export_id, last_exported_at
)
values ($destination, $table_name, $watermark, $exports, $rows, $export_id, $exported_at)
on conflict (destination, table_name) do update set
    watermark = excluded.watermark,
    exports = state.exports + excluded.exports,
    rows_exported = state.rows_exported + excluded.rows_exported,
    last_export_id = excluded.last_export_id,
    last_exported_at = excluded.last_exported_at
