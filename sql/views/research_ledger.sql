-- research_ledger: the credit_ledger entries of research runs in the shape research_ledger had
-- as a table before migration 017, so scripts reading it keep working: credit_ledger is the one
-- ledger of every run's credits, and research writes its charges and possible charges there
-- (and the adjustment that balances a completed run to the usage, which is not shown here:
-- research_ledger never had one; run_credits and credit_ledger have it).

create or replace view research_ledger as

with

research as (
    select run_id from runs where mode = 'research'
),

entries as (
    select * from credit_ledger
),

final as (
    select
        entries.run_id,
        entries.chunk_no as request_no,
        entries.ref,
        entries.kind,
        entries.credits,
        entries.recorded_at,
        entries.note
    from entries
    semi join research on entries.run_id = research.run_id
    where entries.kind in ('charge', 'possible')
)

select * from final;

comment on view research_ledger is 'Every credit a research request charged (or may have), from credit_ledger: deep research has no holds.';
comment on column research_ledger.run_id is 'The research run.';
comment on column research_ledger.request_no is 'The request the entry belongs to (credit_ledger.chunk_no).';
comment on column research_ledger.ref is 'The service''s request_id, or rq-<run>-<request_no>[-<attempt> after the first] when the answer was lost.';
comment on column research_ledger.kind is 'charge (billed) or possible (may have been billed; not ruled out).';
comment on column research_ledger.credits is 'Credits (never negative).';
comment on column research_ledger.recorded_at is 'When placeflow recorded the entry.';
comment on column research_ledger.note is 'Why, in words (rows, fields, identity; or how a lost answer was resolved).';
