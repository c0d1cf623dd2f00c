-- 021 money edges (issue 44): a job chunk counts the attempts of its POST whose answer was
-- lost after the request may have reached the service. A chunk with lost answers is where a
-- service that forgot its Idempotency-Key may have billed the same places twice: the job
-- that answered is judged original or new work as it comes (a known double charge is booked
-- as a `possible` ledger entry), and the account names these chunks when the usage shows
-- more than the ledger at the end.

alter table jobs add column lost_answers integer default 0;

comment on column jobs.lost_answers is 'Attempts of the chunk''s job POST whose answer was lost after the request may have reached the service (a reset, a timeout, a 502/504): where a service that forgot the Idempotency-Key may have created a second job.';
