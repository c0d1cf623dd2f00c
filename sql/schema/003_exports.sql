-- 003 exports: what each warehouse load sent where, so the next one sends only what changed.

create table export_state (
    destination varchar not null,
    table_name varchar not null,
    watermark timestamptz,
    exports bigint not null default 0,
    rows_exported bigint not null default 0,
    last_export_id varchar,
    last_exported_at timestamptz,
    primary key (destination, table_name)
);

comment on table export_state is 'Per destination and table, how far warehouse loads (placeflow export) have gone.';
comment on column export_state.destination is 'The destination, redacted: file:///path, or postgresql://user@host:port/db (never a password).';
comment on column export_state.table_name is 'The exported table or view (places_latest, place_changes, ...).';
comment on column export_state.watermark is 'The highest value of the table''s incremental column sent so far; the next export sends rows above it.';
comment on column export_state.exports is 'Exports of the table to the destination that sent at least one row.';
comment on column export_state.rows_exported is 'Rows sent over all exports (a row sent again counts again).';
comment on column export_state.last_export_id is 'The export that last advanced the watermark.';
comment on column export_state.last_exported_at is 'When that export finished.';

create table export_log (
    export_id varchar not null,
    destination varchar not null,
    table_name varchar not null,
    full_export boolean not null,
    watermark_from timestamptz,
    watermark_to timestamptz,
    rows_sent bigint not null,
    files varchar,
    exported_at timestamptz not null,
    primary key (export_id, table_name)
);

comment on table export_log is 'One row per table of every finished export (recorded after the destination committed).';
comment on column export_log.export_id is 'Identifier of the export (exp_<utc timestamp>_<random hex>).';
comment on column export_log.destination is 'The destination, redacted (never a password).';
comment on column export_log.table_name is 'The exported table or view.';
comment on column export_log.full_export is 'Whether --full asked for every row rather than the rows above the watermark.';
comment on column export_log.watermark_from is 'The watermark before the export (null: nothing sent before, or --full).';
comment on column export_log.watermark_to is 'The watermark after the export.';
comment on column export_log.rows_sent is 'Rows the export sent for the table.';
comment on column export_log.files is 'JSON array of the Parquet files written, relative to the destination; null for PostgreSQL.';
comment on column export_log.exported_at is 'When the export of the table was recorded.';
