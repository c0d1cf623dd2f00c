-- 018 view set: which sql/views/ the warehouse's views were last created from (a digest of
-- their files), so a writer opening the warehouse re-creates them only when they changed (or a
-- migration ran), not on every open: a run opens it again after every wait on the service.

create table view_set (
    digest varchar not null,
    views integer not null,
    applied_at timestamptz not null
);

comment on table view_set is 'One row: the digest of the sql/views/ files the warehouse''s views were last created from (placeflow re-creates them when it differs).';
comment on column view_set.digest is 'sha256 of every view file''s name and text, in name order.';
comment on column view_set.views is 'How many views that created: one gone since (dropped by hand) has them created again.';
comment on column view_set.applied_at is 'When the views were last created.';
