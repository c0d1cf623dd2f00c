-- 005 research: deep-research runs, their requests written ahead of sending, the answers in long
-- form (one row per place per field) and the credits each request charged. A research run's input
-- rows go to run_rows and rejects, its places to run_places (chunk_no = request_no), as for runs.

-- research_runs ------------------------------------------------------------------------------

create table research_runs (
    run_id varchar primary key,
    created_at timestamptz not null,
    finished_at timestamptz,
    status varchar not null
        check (status in ('planned', 'running', 'completed', 'failed', 'refused', 'interrupted')),
    fields varchar not null,
    verify_identity boolean not null,
    validate_existence boolean not null,
    sample integer,
    max_credits bigint,
    fingerprint varchar not null,
    inputs varchar,
    target varchar,
    key_hint varchar check (key_hint is null or length(key_hint) <= 5),
    rows_read bigint not null default 0,
    rejected bigint not null default 0,
    duplicates bigint not null default 0,
    skipped_fresh bigint not null default 0,
    submitted bigint not null default 0,
    credits_estimated bigint,
    credits_per_field integer,
    credits_per_identity integer,
    usage_before bigint,
    usage_after bigint,
    message varchar
);

comment on table research_runs is 'One row per run of placeflow research: the attributes asked, the budget, and how it ended.';
comment on column research_runs.run_id is 'Identifier of the run (rr_<utc timestamp>_<random hex>).';
comment on column research_runs.created_at is 'When the run was opened.';
comment on column research_runs.finished_at is 'When the run ended; null while it runs or after an interruption.';
comment on column research_runs.status is 'planned, running, completed, failed, refused (budget, balance or field policy; nothing spent by the refused request) or interrupted (resumable by the same command).';
comment on column research_runs.fields is 'JSON array of the DeepResearchFieldSpecs sent (name, description, value_type, allowed_values).';
comment on column research_runs.verify_identity is 'Whether requests asked verify_identity (+1 credit per row).';
comment on column research_runs.validate_existence is 'Whether requests asked validate_existence (an existence attribute per row).';
comment on column research_runs.sample is '--sample N: only the first N unique places were researched; null for all.';
comment on column research_runs.max_credits is 'The run''s budget (--max-credits); null when none was given.';
comment on column research_runs.fingerprint is 'sha256 of the inputs (paths, sizes, mtimes) and the field spec: finds an unfinished run of the same command to resume.';
comment on column research_runs.inputs is 'JSON array of the input paths as given.';
comment on column research_runs.target is 'The service the run talked to.';
comment on column research_runs.key_hint is 'The last 4 characters of the API key (…a1b2 at most); never more.';
comment on column research_runs.rows_read is 'Input rows read, over all input files.';
comment on column research_runs.rejected is 'Input rows rejected before sending (see rejects).';
comment on column research_runs.duplicates is 'Input rows whose place an earlier row of the run already had.';
comment on column research_runs.skipped_fresh is 'Input rows whose place had a fresh answer for every field of the same spec.';
comment on column research_runs.submitted is 'Unique places the run researches (rows of run_places).';
comment on column research_runs.credits_estimated is 'Credits the run''s requests can cost, from the rate card, before anything was spent.';
comment on column research_runs.credits_per_field is 'The rate card''s credits per place per attribute (deep_research_field).';
comment on column research_runs.credits_per_identity is 'The rate card''s credits per row for verify_identity.';
comment on column research_runs.usage_before is 'The service''s current_usage (GET /v1/usage) before the run spent anything.';
comment on column research_runs.usage_after is 'The service''s current_usage after the run; null until known.';
comment on column research_runs.message is 'Why the run was refused, failed or interrupted, and what to do next.';

-- research_requests --------------------------------------------------------------------------

create table research_requests (
    run_id varchar not null,
    request_no integer not null,
    places integer not null check (places between 1 and 10),
    body varchar not null,
    body_sha256 varchar not null,
    credits_max integer not null check (credits_max >= 0),
    max_credits_sent integer,
    state varchar not null
        check (state in ('planned', 'sent', 'received', 'answered', 'lost', 'uncertain')),
    attempts integer not null default 0,
    usage_expected bigint,
    response varchar,
    request_id varchar,
    stopped_reason varchar,
    estimated_credits integer,
    credits_charged integer,
    possible_extra_credits integer not null default 0,
    error varchar,
    error_code varchar,
    planned_at timestamptz not null,
    sent_at timestamptz,
    answered_at timestamptz,
    primary key (run_id, request_no)
);

comment on table research_requests is 'Each POST /v1/deep-research of a run, written ahead: planned, then sent (committed before the POST), then answered.';
comment on column research_requests.run_id is 'The research run.';
comment on column research_requests.request_no is '0-based number of the request within the run (run_places.chunk_no).';
comment on column research_requests.places is 'Places in the request (1 to 10).';
comment on column research_requests.body is 'The exact JSON body sent, without max_credits (a resumed run sends the same places and fields).';
comment on column research_requests.body_sha256 is 'sha256 of body.';
comment on column research_requests.credits_max is 'The most the request can charge per the rate card: places x (fields + existence) per field, plus identity per row.';
comment on column research_requests.max_credits_sent is 'max_credits sent with the request: the run''s budget left, so no request can take the run past it.';
comment on column research_requests.state is 'planned; sent (may have reached the service); received (its answer stored, not yet loaded); answered (loaded); lost (billed per the usage delta, but no answer came back); uncertain (may have been billed; not resent without --resend-uncertain).';
comment on column research_requests.attempts is 'Times the request was sent (agent_unavailable and resolved lost requests send it again).';
comment on column research_requests.usage_expected is 'The key''s current_usage expected just before the latest send (usage_before plus the run''s charges): the usage check of a lost answer compares against it.';
comment on column research_requests.response is 'The raw answer, stored the moment it arrives and cleared once loaded: a crash before the load loads it on resume instead of buying it again.';
comment on column research_requests.request_id is 'The service''s request_id of the answer.';
comment on column research_requests.stopped_reason is 'meta.stopped_reason of the answer: completed, cost_capped, agent_unavailable, or an unfamiliar value kept as sent.';
comment on column research_requests.estimated_credits is 'meta.estimated_credits of the answer (the service''s own up-front estimate).';
comment on column research_requests.credits_charged is 'Credits the request charged, by the spec''s rules applied to its rows (per the usage delta for a lost answer).';
comment on column research_requests.possible_extra_credits is 'Credits the request may have cost that the client could not rule out (an uncertain or resent request).';
comment on column research_requests.error is 'The latest error of the request (402, 422, agent_unavailable, a lost answer), in words.';
comment on column research_requests.error_code is 'The service''s error_code or error (max_credits_exceeded, FIELD_REJECTED, quota_exceeded, agent_unavailable, OUTCOME_UNKNOWN).';
comment on column research_requests.planned_at is 'When the request was planned.';
comment on column research_requests.sent_at is 'When the request was last sent.';
comment on column research_requests.answered_at is 'When its answer was loaded.';

-- research_answers ---------------------------------------------------------------------------

create table research_answers (
    run_id varchar not null,
    place_key varchar not null,
    request_no integer not null,
    position integer not null,
    field varchar not null,
    field_sha varchar not null,
    value json,
    confidence varchar,
    status varchar not null,
    row_status varchar not null,
    row_outcome varchar,
    error varchar,
    identity json,
    name_verdict varchar,
    address_verdict varchar,
    verified_name varchar,
    verified_address varchar,
    credits integer not null check (credits >= 0),
    request_id varchar,
    researched_at timestamptz not null,
    loaded_at timestamptz not null
);

comment on table research_answers is 'Deep-research answers in long form: one row per place per field per run (a row error gives each field a row with status error).';
comment on column research_answers.run_id is 'The research run.';
comment on column research_answers.place_key is 'The place (the request''s id).';
comment on column research_answers.request_no is 'The request that answered it.';
comment on column research_answers.position is '0-based position of the place in its request (rows come back in request order).';
comment on column research_answers.field is 'The attribute''s name (existence for validate_existence).';
comment on column research_answers.field_sha is 'Hash of the attribute''s spec and the identity flag: answers are fresh only for the same spec.';
comment on column research_answers.value is 'The ResultCell value as JSON (true, "italian", 42, ...); null when abstained, capped, rejected or errored.';
comment on column research_answers.confidence is 'high, medium or low; null when the value is null (estimated always has low).';
comment on column research_answers.status is 'Field status: confirmed, estimated, unconfirmed (abstained, billed), cost_capped, rejected; error when the row failed.';
comment on column research_answers.row_status is 'The row''s status: enriched, abstain, error or cost_capped.';
comment on column research_answers.row_outcome is 'The row''s outcome: enriched (a field confirmed) or abstain; null on error.';
comment on column research_answers.error is 'The row''s error when it failed (retried by the next run; not billed).';
comment on column research_answers.identity is 'The identity block as JSON (verify_identity): name and address with value, verdict, original.';
comment on column research_answers.name_verdict is 'identity.name.verdict: confirmed, corrected or unresolved.';
comment on column research_answers.address_verdict is 'identity.address.verdict: confirmed, corrected or unresolved.';
comment on column research_answers.verified_name is 'identity.name.value: the name the row was researched against.';
comment on column research_answers.verified_address is 'identity.address.value: the address the row was researched against.';
comment on column research_answers.credits is 'Credits this answer cost: per field billed, plus the identity credit on the row''s first field.';
comment on column research_answers.request_id is 'The service''s request_id.';
comment on column research_answers.researched_at is 'The service''s enrichment_timestamp (else the load time).';
comment on column research_answers.loaded_at is 'When placeflow loaded the answer; freshness is measured from it.';

-- research_ledger ----------------------------------------------------------------------------

create table research_ledger (
    run_id varchar not null,
    request_no integer not null,
    ref varchar not null,
    kind varchar not null check (kind in ('charge', 'possible')),
    credits bigint not null check (credits >= 0),
    recorded_at timestamptz not null,
    note varchar
);

comment on table research_ledger is 'Every credit a research request charged (or may have): deep research has no holds.';
comment on column research_ledger.run_id is 'The research run.';
comment on column research_ledger.request_no is 'The request the entry belongs to.';
comment on column research_ledger.ref is 'The service''s request_id, or rq-<run>-<request_no> when the answer was lost.';
comment on column research_ledger.kind is 'charge (billed) or possible (may have been billed; not ruled out).';
comment on column research_ledger.credits is 'Credits (never negative).';
comment on column research_ledger.recorded_at is 'When placeflow recorded the entry.';
comment on column research_ledger.note is 'Why, in words (rows, fields, identity; or how a lost answer was resolved).';
