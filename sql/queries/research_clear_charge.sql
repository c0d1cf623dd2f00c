-- research_clear_charge: drop an earlier load's charge of the same answer (a repeated load
-- replaces it, never adds). Parameters: $run_id, $request_no, $ref.
delete from research_ledger
where run_id = $run_id
    and request_no = $request_no
    and kind = 'charge'
    and ref = $ref
