-- 022 usage expected: a research request's lost answer is judged by the run's rule for a request
-- without an Idempotency-Key (placeflow.pipeline.writeahead), against the run's ledger. Only the
-- column comment changes.

comment on column research_requests.usage_expected is 'The key''s current_usage the run accounted for just before the latest send (usage_before plus what its ledger explains: charges and possible charges); a lost answer is judged by the usage beyond the ledger (pipeline.writeahead).';
