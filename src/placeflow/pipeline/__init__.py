"""Pipeline stages, named as the data flows; each a plain typed function returning its summary.

    read       files (or any Source) ─▶ rows, verbatim, in batches           ReadInfo
    normalize  rows ─▶ places + rejects (trimmed, checked, countries mapped)  NormalizeInfo
    dedupe     places ─▶ place_key; the first row of a key is sent           DedupeInfo
    fresh      places with a fresh outcome in the warehouse are skipped      FreshInfo
    plan       one request per place, chunked, routed (sync or job)          PlanInfo
               (normalize's output a batch at a time into DuckDB staging: `staging`)
    submit     POST a job under its Idempotency-Key (or send a sync batch)   SubmitInfo
    poll       one poller follows every job by its eta, to its end           JobStatus
    fetch      download the result file, verify sha256, size, lines          Fetched
    load       the verified file into DuckDB in one transaction              LoadInfo
    account    outcomes, ledger vs the service's usage delta                 RunSummary

The order is written once, in `placeflow.runner.orchestrate` (its first half, up to plan, in
`placeflow.runner.prepare`); run state in `placeflow.state.runstate`.
"""
