-- 020 budgets (issue 45): spend governed across runs and months. One row per budget: so many
-- credits per day, week or month, for every spending command or for one kind of them (run,
-- refresh, research). What a budget has spent is read from credit_ledger and the runs still
-- spending (sql/queries/budget_spent.sql); a run reserves its estimate when it is opened, in the
-- same hold of the warehouse as its claims, so two processes cannot pass a budget together.

create table budgets (
    per varchar not null check (per in ('day', 'week', 'month')),
    applies_to varchar not null default 'all'
        check (applies_to in ('all', 'run', 'refresh', 'research')),
    credits bigint not null check (credits >= 0),
    warn_at double not null default 0.8 check (warn_at > 0 and warn_at <= 1),
    set_at timestamptz not null,
    primary key (per, applies_to)
);

comment on table budgets is 'Credit budgets kept in the warehouse (placeflow budget set): every run, resume, refresh and research is checked against those that apply to it before it spends.';
comment on column budgets.per is 'The budget''s period: day (UTC), week (from Monday, UTC) or month (to the service''s next reset_date when known, else the calendar month, UTC).';
comment on column budgets.applies_to is 'all (every spending command: placeflow budget set without --for), or the one kind it governs: run (runs of files and their resumes), refresh or research.';
comment on column budgets.credits is 'Credits the commands it governs may spend in one period (charged plus held, from credit_ledger and the runs still spending).';
comment on column budgets.warn_at is 'The share of credits past which a run warns (stderr, its summary and an event): 0.8 unless set.';
comment on column budgets.set_at is 'When the budget was last set (placeflow budget set replaces the one of the same per and applies_to).';
