-- 006 adjustments (issue 11): the ledger balances to the service's own usage. credit_ledger
-- takes a signed `adjustment` entry (the service billed more or less than the spec's rule
-- said); a job chunk records when its POST was about to go out (sending_at), so a resume can
-- tell "never sent" from "answer lost"; billing_readings keeps what adjustments taught about
-- which row shapes a service bills.

create table credit_ledger_006 (
    run_id varchar not null,
    chunk_no integer,
    ref varchar not null,
    kind varchar not null check (kind in ('hold', 'charge', 'release', 'adjustment')),
    credits bigint not null,
    recorded_at timestamptz not null,
    note varchar,
    check (credits >= 0 or kind = 'adjustment')
);

insert into credit_ledger_006 by name select * from credit_ledger;

drop table credit_ledger;

alter table credit_ledger_006 rename to credit_ledger;

comment on table credit_ledger is 'Every credit movement a run caused: holds at job submission, charges, releases, and adjustments to the service''s own usage.';
comment on column credit_ledger.run_id is 'The run that spent the credits.';
comment on column credit_ledger.chunk_no is 'The chunk (job or sync batch) the entry belongs to; null for a run''s adjustment.';
comment on column credit_ledger.ref is 'The job''s batch_id, or the request id (else the chunk ref) of a synchronous batch; usage for an adjustment.';
comment on column credit_ledger.kind is 'hold (reserved at submission), charge (settled), release (a hold given back) or adjustment (signed: the service''s usage delta minus the charges, once the run settled).';
comment on column credit_ledger.credits is 'Credits moved (never negative except an adjustment, whose sign is its direction).';
comment on column credit_ledger.recorded_at is 'When placeflow recorded the entry (named so because AT is a keyword in DuckDB 2).';
comment on column credit_ledger.note is 'Why, in words (e.g. 1 credit per row held at submission).';

alter table jobs add column sending_at timestamptz;

comment on column jobs.sending_at is 'When the chunk''s request was about to be sent (written before the POST): a resume that finds it set without an answer knows the request may have reached the service.';

create table billing_readings (
    target varchar not null,
    shape varchar not null,
    billed boolean not null,
    run_id varchar not null,
    learnt_at timestamptz not null,
    primary key (target, shape)
);

comment on table billing_readings is 'What a service was seen to bill, per target and row shape, learnt from a run whose ledger had to be adjusted to its usage.';
comment on column billing_readings.target is 'The service (runs.target).';
comment on column billing_readings.shape is 'The row shape (null_status: a success whose status object holds only nulls and no attribute value).';
comment on column billing_readings.billed is 'Whether the service bills rows of that shape.';
comment on column billing_readings.run_id is 'The run whose adjustment taught it.';
comment on column billing_readings.learnt_at is 'When it was learnt.';
