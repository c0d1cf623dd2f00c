-- run_credits: per run, the credits estimated before it, held, charged and released per the
-- ledger, and the service's usage delta over the run; ledger_vs_usage = usage_delta - charged
-- is 0 when the ledger explains the service's count (up to possible_extra_credits more). Research
-- runs are runs too: their charges are in the ledger, and their possible charges (entries of
-- kind possible) count in possible_extra_credits.

create or replace view run_credits as

with

run_facts as (
    select
        run_id,
        status,
        credits_estimated,
        usage_before,
        usage_after,
        possible_extra_credits
    from runs
),

ledger_entries as (
    select
        run_id,
        kind,
        credits
    from credit_ledger
),

ledger_totals as (
    select
        run_id,
        sum(credits) filter (where kind = 'hold') as held,
        sum(credits) filter (where kind = 'charge') as charged,
        sum(credits) filter (where kind = 'release') as released,
        sum(credits) filter (where kind = 'adjustment') as adjustment,
        sum(credits) filter (where kind = 'possible') as possible
    from ledger_entries
    group by run_id
),

final as (
    select
        run_facts.run_id,
        run_facts.status,
        run_facts.credits_estimated as estimated,
        coalesce(ledger_totals.held, 0) as held,
        coalesce(ledger_totals.charged, 0) as charged,
        coalesce(ledger_totals.released, 0) as released,
        run_facts.usage_before,
        run_facts.usage_after,
        run_facts.usage_after - run_facts.usage_before as usage_delta,
        run_facts.usage_after - run_facts.usage_before - coalesce(ledger_totals.charged, 0)
            as difference,
        coalesce(ledger_totals.adjustment, 0) as adjustment,
        run_facts.usage_after - run_facts.usage_before - coalesce(ledger_totals.charged, 0)
            - coalesce(ledger_totals.adjustment, 0) as ledger_vs_usage,
        run_facts.possible_extra_credits + coalesce(ledger_totals.possible, 0)
            as possible_extra_credits
    from run_facts
    left join ledger_totals on run_facts.run_id = ledger_totals.run_id
)

select * from final;

comment on view run_credits is 'Per run: credits estimated, held, charged and released per the ledger, against the service''s usage delta.';
comment on column run_credits.run_id is 'The run.';
comment on column run_credits.status is 'The run''s status.';
comment on column run_credits.estimated is 'Credits estimated before the run (the most it could cost).';
comment on column run_credits.held is 'Credits held at job submissions (ledger).';
comment on column run_credits.charged is 'Credits charged (ledger).';
comment on column run_credits.released is 'Held credits released back (ledger).';
comment on column run_credits.usage_before is 'The service''s current_usage before the run.';
comment on column run_credits.usage_after is 'The service''s current_usage after the run.';
comment on column run_credits.usage_delta is 'usage_after - usage_before: what the service counted for the run.';
comment on column run_credits.difference is 'usage_delta - charged, before any adjustment: what the spec''s rule did not explain.';
comment on column run_credits.adjustment is 'Signed adjustment entries (ledger) that balanced the ledger to the service''s usage.';
comment on column run_credits.ledger_vs_usage is 'usage_delta - charged - adjustment: 0 when the ledger explains the service''s count.';
comment on column run_credits.possible_extra_credits is 'Charges the client could not rule out: requests whose answers were lost (held as uncertain), places sent again by --resend-uncertain, and research requests'' possible charges (ledger).';
