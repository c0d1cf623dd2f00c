-- schema_migrations: which migrations of sql/schema/ this database has (created before the first).

create table if not exists schema_migrations (
    version varchar primary key,
    name varchar not null,
    applied_at timestamptz not null
);
comment on table schema_migrations is 'Migrations of sql/schema/ applied to this database.';
comment on column schema_migrations.version is 'The migration''s number, from its file name (001).';
comment on column schema_migrations.name is 'The migration''s name, from its file name (init).';
comment on column schema_migrations.applied_at is 'When the migration was applied.';
