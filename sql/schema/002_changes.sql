-- 002 changes: what changed about a place from one successful outcome to the next. One row per
-- changed field per place per run, written by placeflow.pipeline.changes.record_changes (idempotent:
-- a run's changes are recorded once). The history of each place (place_history) is a view.

create table place_changes (
    run_id varchar not null,
    place_key varchar not null,
    field varchar not null,
    kind varchar not null,
    old_value varchar,
    new_value varchar,
    old_run_id varchar not null,
    outcome_at timestamptz not null,
    detected_at timestamptz not null,
    primary key (run_id, place_key, field)
);

comment on table place_changes is 'One row per changed field per place per run: the run''s outcome compared with the place''s previous successful answer of the same field, by the noise rules.';
comment on column place_changes.run_id is 'The run whose outcome showed the change.';
comment on column place_changes.place_key is 'The place.';
comment on column place_changes.field is 'operational_status, closure_reason, existence, opening_hours, phone, website, facebook, instagram, tiktok, email, address or coordinates.';
comment on column place_changes.kind is 'What happened, in a word: closed, reopened, not_exists, moved (closed as relocated, or coordinates moved 50 m or more), verdict (another status or existence change), address, or the attribute''s name (phone, website, opening_hours, ...).';
comment on column place_changes.old_value is 'The previous answer as text (null: not found then).';
comment on column place_changes.new_value is 'The new answer as text (null: not found now).';
comment on column place_changes.old_run_id is 'The run whose outcome gave the previous answer.';
comment on column place_changes.outcome_at is 'When the new outcome was loaded (the change is known from then).';
comment on column place_changes.detected_at is 'When placeflow recorded the change.';
