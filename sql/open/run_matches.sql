-- run_matches: the rows of the run being opened ($run_id) that the fuzzy pass merged (match
-- rule probabilistic; its run_rows, recorded from pf_staged_marked in the same transaction),
-- each with the merge's place, probability and evidence (pf_staged_matches, by the row's own
-- key).

insert into run_matches by name
select
    $run_id as run_id,
    marked.row_ord,
    marked.own_key,
    marked.place_key as answer_key,
    matches.matched_key,
    marked.matched_row,
    matches.matched_run_id,
    marked.match_rule,
    matches.match_probability,
    matches.evidence
from run_rows as marked
inner join pf_staged_matches as matches on marked.own_key = matches.place_key
where marked.run_id = $run_id and marked.match_rule = 'probabilistic'
