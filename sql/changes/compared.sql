-- compared: how many places of run ? had a previous answer to compare the run's outcome with
-- (some field the run answered was answered before, by an earlier successful outcome).

with

run_facts as (
    select
        place_key,
        field,
        run_id,
        outcome_at
    from place_facts
    where run_id = ?
),

earlier_facts as (
    select
        place_facts.place_key,
        place_facts.field,
        place_facts.run_id,
        place_facts.outcome_at
    from place_facts
    semi join run_facts on place_facts.place_key = run_facts.place_key
),

compared as (
    select distinct run_facts.place_key
    from run_facts
    inner join earlier_facts
        on run_facts.place_key = earlier_facts.place_key
        and run_facts.field = earlier_facts.field
        and (
            earlier_facts.outcome_at < run_facts.outcome_at
            or (earlier_facts.outcome_at = run_facts.outcome_at
                and earlier_facts.run_id < run_facts.run_id)
        )
)

select count(*) from compared
