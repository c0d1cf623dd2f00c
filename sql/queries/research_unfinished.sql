-- research_unfinished: the newest research run of this command (same $fingerprint) that did
-- not complete, so the same command resumes it instead of planning again.

with

runs as (
    select
        run_id,
        created_at,
        status
    from runs
    where mode = 'research' and fingerprint = $fingerprint
),

final as (
    select run_id
    from runs
    where status in ('planned', 'running', 'interrupted', 'refused')
    qualify row_number() over (order by created_at desc) = 1
)

select run_id from final
