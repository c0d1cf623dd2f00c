-- 001 init: the warehouse of runs, their input rows, the places sent, the jobs, the outcomes
-- and the credit ledger. Every table and column carries a comment (duckdb_columns().comment).

-- runs ---------------------------------------------------------------------------------------

create table runs (
    run_id varchar primary key,
    created_at timestamptz not null,
    finished_at timestamptz,
    status varchar not null
        check (status in ('planned', 'running', 'completed', 'failed', 'refused', 'interrupted')),
    mode varchar not null check (mode in ('validate', 'enrich')),
    attributes varchar not null default '',
    include_summary boolean not null default false,
    signature varchar not null,
    inputs varchar,
    options varchar,
    target varchar,
    -- like, not starts_with: DuckDB 2 cannot replay a WAL that alters a table whose check
    -- calls starts_with (core_functions is not loaded yet and is fetched from the network).
    key_hint varchar check (
        key_hint is null
        or length(key_hint) <= 4
        or (key_hint like '…%' and length(key_hint) <= 5)
    ),
    fingerprint varchar,
    rows_read bigint not null default 0,
    rejected bigint not null default 0,
    duplicates bigint not null default 0,
    skipped_fresh bigint not null default 0,
    submitted bigint not null default 0,
    succeeded bigint not null default 0,
    failed bigint not null default 0,
    credits_estimated bigint,
    usage_before bigint,
    usage_after bigint,
    possible_extra_credits bigint not null default 0,
    message varchar
);

comment on table runs is 'One row per run of the pipeline: what it was asked, against what, and how it ended.';
comment on column runs.run_id is 'Identifier of the run (run_<utc timestamp>_<random hex>).';
comment on column runs.created_at is 'When the run was opened.';
comment on column runs.finished_at is 'When the run ended (completed, failed or refused); null while it runs or after an interruption.';
comment on column runs.status is 'planned, running, completed, failed, refused (budget check said no; nothing spent) or interrupted (stopped part way; resumable).';
comment on column runs.mode is 'validate or enrich: which service operation the run performs.';
comment on column runs.attributes is 'The enrich attributes asked for, canonical order, comma-joined; empty for validate.';
comment on column runs.include_summary is 'Whether enrich requests asked for place_summary.';
comment on column runs.signature is 'mode|attributes|summary flag: outcomes are interchangeable (fresh) only between runs with the same signature.';
comment on column runs.inputs is 'JSON array of the input paths as given.';
comment on column runs.options is 'JSON object of every run option (mode, attributes, budget, max age, route, chunk size, column mapping, encoding).';
comment on column runs.target is 'The service the run talked to: ''embedded sandbox'' or the base URL.';
comment on column runs.key_hint is 'The last 4 characters of the API key, optionally after an ellipsis (…a1b2); never more (enforced).';
comment on column runs.fingerprint is 'sha256 of the run command (input paths with size and mtime, and the options): finds an unfinished run of the same command to resume.';
comment on column runs.rows_read is 'Input rows read, over all input files.';
comment on column runs.rejected is 'Input rows rejected before sending (see rejects).';
comment on column runs.duplicates is 'Input rows whose place_key an earlier row of the run already had.';
comment on column runs.skipped_fresh is 'Input rows whose place had a fresh successful outcome of the same signature, so were not sent.';
comment on column runs.submitted is 'Unique places the run sends (rows of run_places).';
comment on column runs.succeeded is 'Places sent whose outcome has success true.';
comment on column runs.failed is 'Places sent whose outcome has success false.';
comment on column runs.credits_estimated is 'The most the run can cost, estimated before anything was spent.';
comment on column runs.usage_before is 'The service''s current_usage (GET /v1/usage) before the run spent anything; null when not asked.';
comment on column runs.usage_after is 'The service''s current_usage after the run; null until known.';
comment on column runs.possible_extra_credits is 'Charges the client could not rule out, such as a synchronous request retried after a dropped connection.';
comment on column runs.message is 'Why the run was refused, failed or interrupted, and what to do next; null when it completed cleanly.';

-- run_rows -----------------------------------------------------------------------------------

create table run_rows (
    run_id varchar not null,
    row_ord bigint not null,
    source_file varchar not null,
    source_row bigint not null,
    source_id varchar,
    place_key varchar,
    disposition varchar not null
        check (disposition in ('submitted', 'duplicate', 'skipped_fresh', 'rejected')),
    note varchar,
    primary key (run_id, row_ord),
    check ((disposition = 'rejected') = (place_key is null))
);

comment on table run_rows is 'Every input row of every run with its disposition: nothing is silently dropped.';
comment on column run_rows.run_id is 'The run that read the row.';
comment on column run_rows.row_ord is '0-based position of the row over all the run''s inputs, in reading order.';
comment on column run_rows.source_file is 'The input file the row came from.';
comment on column run_rows.source_row is 'The row''s 1-based data row number in its file (header excluded).';
comment on column run_rows.source_id is 'The user''s own identifier column of the row, if the input had one.';
comment on column run_rows.place_key is 'Stable hash of the place''s normalised identity; null when rejected.';
comment on column run_rows.disposition is 'submitted (its place is sent by this run), duplicate (an earlier row has the same place_key), skipped_fresh (a fresh outcome exists) or rejected.';
comment on column run_rows.note is 'Detail of the disposition: the reject reason, or the row a duplicate repeats.';

-- rejects ------------------------------------------------------------------------------------

create table rejects (
    run_id varchar not null,
    row_ord bigint not null,
    source_file varchar not null,
    source_row bigint not null,
    source_id varchar,
    field varchar,
    reason varchar not null,
    raw varchar,
    primary key (run_id, row_ord)
);

comment on table rejects is 'Input rows that could not be sent, with the reason.';
comment on column rejects.run_id is 'The run that read the row.';
comment on column rejects.row_ord is 'The row''s row_ord in run_rows.';
comment on column rejects.source_file is 'The input file the row came from.';
comment on column rejects.source_row is 'The row''s 1-based data row number in its file.';
comment on column rejects.source_id is 'The user''s own identifier of the row, if any.';
comment on column rejects.field is 'The field at fault (poi_name, latitude, ...); null when the row as a whole is at fault.';
comment on column rejects.reason is 'Why the row was rejected, in words a user can act on.';
comment on column rejects.raw is 'JSON text of the raw input values of the row, verbatim.';

-- run_places ---------------------------------------------------------------------------------

create table run_places (
    run_id varchar not null,
    place_key varchar not null,
    chunk_no integer not null,
    position integer not null check (position >= 0),
    request varchar not null,
    primary key (run_id, place_key),
    unique (run_id, chunk_no, position)
);

comment on table run_places is 'The unique places a run sends, each with its chunk, position and the exact request.';
comment on column run_places.run_id is 'The run that sends the place.';
comment on column run_places.place_key is 'The place''s key; the request''s id.';
comment on column run_places.chunk_no is 'The chunk (bulk job or synchronous batch) the place is sent in.';
comment on column run_places.position is '0-based line of the place in its chunk (and in the chunk''s result file).';
comment on column run_places.request is 'The exact JSON object sent for the place; its id is the place_key.';

-- jobs ---------------------------------------------------------------------------------------

create table jobs (
    run_id varchar not null,
    chunk_no integer not null,
    route varchar not null check (route in ('job', 'sync')),
    kind varchar not null check (kind in ('validate', 'enrich')),
    rows integer not null check (rows > 0),
    content_sha256 varchar,
    idempotency_key varchar,
    batch_id varchar,
    status varchar not null
        check (status in ('planned', 'submitted', 'completed', 'failed', 'cancelled',
                          'timed_out', 'loaded')),
    result_path varchar,
    result_sha256 varchar,
    result_size bigint,
    rows_loaded integer,
    credits_held integer,
    credits_charged integer,
    credits_released integer,
    error varchar,
    error_code varchar,
    created_at timestamptz,
    submitted_at timestamptz,
    finished_at timestamptz,
    loaded_at timestamptz,
    primary key (run_id, chunk_no)
);

comment on table jobs is 'One row per chunk: a bulk job or a synchronous batch, written ahead of every request.';
comment on column jobs.run_id is 'The run the chunk belongs to.';
comment on column jobs.chunk_no is '0-based number of the chunk within the run.';
comment on column jobs.route is 'job (a bulk job) or sync (a synchronous batch).';
comment on column jobs.kind is 'validate or enrich.';
comment on column jobs.rows is 'Places in the chunk.';
comment on column jobs.content_sha256 is 'sha256 of the chunk''s exact request body.';
comment on column jobs.idempotency_key is 'Idempotency-Key sent with the job submission (derived from run and content); null for sync.';
comment on column jobs.batch_id is 'The service''s batch_id; null until known, and for sync batches.';
comment on column jobs.status is 'planned, submitted, completed, failed, cancelled, timed_out, or loaded (outcomes in the warehouse).';
comment on column jobs.result_path is 'Where the verified result file is on disk.';
comment on column jobs.result_sha256 is 'sha256 of the result file as downloaded and verified.';
comment on column jobs.result_size is 'Size in bytes of the (gzipped) result file.';
comment on column jobs.rows_loaded is 'Result lines loaded; fewer than rows only for a cancelled job''s partial file.';
comment on column jobs.credits_held is 'Credits the service held at submission (1 per row for jobs; 0 or null for sync).';
comment on column jobs.credits_charged is 'Credits charged for the chunk, as loaded.';
comment on column jobs.credits_released is 'Held credits released back (held minus charged).';
comment on column jobs.error is 'Why the chunk failed, timed out or was cut short.';
comment on column jobs.error_code is 'The service''s error_code, or placeflow''s (TIMED_OUT).';
comment on column jobs.created_at is 'When the chunk was planned.';
comment on column jobs.submitted_at is 'When the chunk was first sent.';
comment on column jobs.finished_at is 'When the service reported the chunk finished (or it was given up).';
comment on column jobs.loaded_at is 'When the chunk''s outcomes were loaded.';

-- The outcome tables carry no primary-key index: a load replaces a chunk's rows in one
-- transaction after checking every line against the place planned at its position, and an
-- index over every outcome cost more than the load itself (checks/double_outcomes watches
-- for a place answered twice in a run).

-- validations --------------------------------------------------------------------------------

create table validations (
    run_id varchar not null,
    place_key varchar not null,
    chunk_no integer not null,
    position integer not null,
    success boolean not null,
    existence_confidence double,
    operational_status varchar,
    closure_confidence double,
    closure_reason varchar,
    error varchar,
    error_code varchar,
    request_id varchar,
    validated_at timestamptz,
    billable boolean not null,
    loaded_at timestamptz not null
);

comment on table validations is 'One POIValidateResponse per place per run, flattened.';
comment on column validations.run_id is 'The run that sent the place.';
comment on column validations.place_key is 'The place (the response''s id).';
comment on column validations.chunk_no is 'The chunk the place was sent in.';
comment on column validations.position is '0-based line of the response in the chunk''s result file.';
comment on column validations.success is 'Whether the service answered the place (failed rows are free).';
comment on column validations.existence_confidence is 'Confidence 0-1 that a matching place ever existed at the address (not whether it operates today).';
comment on column validations.operational_status is 'open, closed, unknown, not_exists, or an unfamiliar value kept as sent.';
comment on column validations.closure_confidence is 'Confidence 0-1 in a closed verdict; null for not_exists.';
comment on column validations.closure_reason is 'permanent, temporary, relocated, replaced, dissolved or unspecified; null unless closed.';
comment on column validations.error is 'The service''s error message for a failed row.';
comment on column validations.error_code is 'The service''s error_code for a failed row.';
comment on column validations.request_id is 'The service''s request_id, if given.';
comment on column validations.validated_at is 'The service''s validation_timestamp.';
comment on column validations.billable is 'Whether the service charges the row under the bulk rule: success with an existence confidence or an operational status.';
comment on column validations.loaded_at is 'When placeflow loaded the row (its own clock; freshness is measured from it).';

-- enrichments --------------------------------------------------------------------------------

create table enrichments (
    run_id varchar not null,
    place_key varchar not null,
    chunk_no integer not null,
    position integer not null,
    success boolean not null,
    attributes_requested varchar,
    existence_confidence double,
    operational_status varchar,
    closure_confidence double,
    closure_reason varchar,
    place_summary varchar,
    opening_hours_value json,
    opening_hours_confidence varchar,
    opening_hours_as_of date,
    opening_hours_status varchar,
    phone_value json,
    phone_confidence varchar,
    phone_as_of date,
    phone_status varchar,
    website_value json,
    website_confidence varchar,
    website_as_of date,
    website_status varchar,
    facebook_value json,
    facebook_confidence varchar,
    facebook_as_of date,
    facebook_status varchar,
    instagram_value json,
    instagram_confidence varchar,
    instagram_as_of date,
    instagram_status varchar,
    tiktok_value json,
    tiktok_confidence varchar,
    tiktok_as_of date,
    tiktok_status varchar,
    email_value json,
    email_confidence varchar,
    email_as_of date,
    email_status varchar,
    phone_number varchar,
    website_url varchar,
    facebook_url varchar,
    facebook_handle varchar,
    instagram_url varchar,
    instagram_handle varchar,
    tiktok_url varchar,
    tiktok_handle varchar,
    email_address varchar,
    error varchar,
    error_code varchar,
    request_id varchar,
    enriched_at timestamptz,
    billable boolean not null,
    loaded_at timestamptz not null
);

comment on table enrichments is 'One POIEnrichResponse per place per run, flattened; each attribute as value, confidence, as_of and cell status.';
comment on column enrichments.run_id is 'The run that sent the place.';
comment on column enrichments.place_key is 'The place (the response''s id).';
comment on column enrichments.chunk_no is 'The chunk the place was sent in.';
comment on column enrichments.position is '0-based line of the response in the chunk''s result file.';
comment on column enrichments.success is 'Whether the service answered the place (failed rows are free).';
comment on column enrichments.attributes_requested is 'The attributes the request asked for, comma-joined in request order.';
comment on column enrichments.existence_confidence is 'status.existence_confidence: confidence 0-1 that the place ever existed.';
comment on column enrichments.operational_status is 'operational_status.status: open, closed, unknown, not_exists, or an unfamiliar value kept as sent.';
comment on column enrichments.closure_confidence is 'operational_status.closure_confidence.';
comment on column enrichments.closure_reason is 'operational_status.closure_reason; null unless closed.';
comment on column enrichments.place_summary is 'Short summary of the place (only when include_summary was asked).';
comment on column enrichments.opening_hours_value is 'opening_hours value as JSON: {days: {monday: ''closed'' or [{open, close}], ...}}; null when not found or not asked.';
comment on column enrichments.opening_hours_confidence is 'Confidence in opening_hours: high, medium, low; null when the value is null.';
comment on column enrichments.opening_hours_as_of is 'Date the opening_hours value was last seen to hold.';
comment on column enrichments.opening_hours_status is 'Cell status of opening_hours (response_format cell): confirmed, estimated, unconfirmed, cost_capped, rejected.';
comment on column enrichments.phone_value is 'phone value as JSON: {number}.';
comment on column enrichments.phone_confidence is 'Confidence in phone: high, medium, low; null when the value is null.';
comment on column enrichments.phone_as_of is 'Date the phone value was last seen to hold.';
comment on column enrichments.phone_status is 'Cell status of phone (response_format cell).';
comment on column enrichments.website_value is 'website value as JSON: {url}.';
comment on column enrichments.website_confidence is 'Confidence in website: high, medium, low; null when the value is null.';
comment on column enrichments.website_as_of is 'Date the website value was last seen to hold.';
comment on column enrichments.website_status is 'Cell status of website (response_format cell).';
comment on column enrichments.facebook_value is 'facebook value as JSON: {url, handle}.';
comment on column enrichments.facebook_confidence is 'Confidence in facebook: high, medium, low; null when the value is null.';
comment on column enrichments.facebook_as_of is 'Date the facebook value was last seen to hold.';
comment on column enrichments.facebook_status is 'Cell status of facebook (response_format cell).';
comment on column enrichments.instagram_value is 'instagram value as JSON (shape not shown in the spec; {url, handle} from the sandbox).';
comment on column enrichments.instagram_confidence is 'Confidence in instagram: high, medium, low; null when the value is null.';
comment on column enrichments.instagram_as_of is 'Date the instagram value was last seen to hold.';
comment on column enrichments.instagram_status is 'Cell status of instagram (response_format cell).';
comment on column enrichments.tiktok_value is 'tiktok value as JSON (shape not shown in the spec; {url, handle} from the sandbox).';
comment on column enrichments.tiktok_confidence is 'Confidence in tiktok: high, medium, low; null when the value is null.';
comment on column enrichments.tiktok_as_of is 'Date the tiktok value was last seen to hold.';
comment on column enrichments.tiktok_status is 'Cell status of tiktok (response_format cell).';
comment on column enrichments.email_value is 'email value as JSON: {email}.';
comment on column enrichments.email_confidence is 'Confidence in email: high, medium, low; null when the value is null.';
comment on column enrichments.email_as_of is 'Date the email value was last seen to hold.';
comment on column enrichments.email_status is 'Cell status of email (response_format cell).';
comment on column enrichments.phone_number is 'phone_value.number (or the value itself when it is a plain string).';
comment on column enrichments.website_url is 'website_value.url (or the value itself when it is a plain string).';
comment on column enrichments.facebook_url is 'facebook_value.url.';
comment on column enrichments.facebook_handle is 'facebook_value.handle.';
comment on column enrichments.instagram_url is 'instagram_value.url.';
comment on column enrichments.instagram_handle is 'instagram_value.handle.';
comment on column enrichments.tiktok_url is 'tiktok_value.url.';
comment on column enrichments.tiktok_handle is 'tiktok_value.handle.';
comment on column enrichments.email_address is 'email_value.email (or the value itself when it is a plain string).';
comment on column enrichments.error is 'The service''s error message for a failed row.';
comment on column enrichments.error_code is 'The service''s error_code for a failed row.';
comment on column enrichments.request_id is 'The service''s request_id, if given.';
comment on column enrichments.enriched_at is 'The service''s enrichment_timestamp.';
comment on column enrichments.billable is 'Whether the service charges the row under the bulk rule: success with an attribute value, a status or an operational status.';
comment on column enrichments.loaded_at is 'When placeflow loaded the row (its own clock; freshness is measured from it).';

-- credit_ledger ------------------------------------------------------------------------------

create table credit_ledger (
    run_id varchar not null,
    chunk_no integer,
    ref varchar not null,
    kind varchar not null check (kind in ('hold', 'charge', 'release')),
    credits bigint not null check (credits >= 0),
    recorded_at timestamptz not null,
    note varchar
);

comment on table credit_ledger is 'Every credit movement a run caused: holds at job submission, charges, releases.';
comment on column credit_ledger.run_id is 'The run that spent the credits.';
comment on column credit_ledger.chunk_no is 'The chunk (job or sync batch) the entry belongs to.';
comment on column credit_ledger.ref is 'The job''s batch_id, or the request id (else the chunk ref) of a synchronous batch.';
comment on column credit_ledger.kind is 'hold (reserved at submission), charge (settled) or release (a hold given back).';
comment on column credit_ledger.credits is 'Credits moved (never negative; the kind gives the direction).';
comment on column credit_ledger.recorded_at is 'When placeflow recorded the entry (named so because AT is a keyword in DuckDB 2).';
comment on column credit_ledger.note is 'Why, in words (e.g. 1 credit per row held at submission).';
