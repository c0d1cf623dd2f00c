-- run_matches: the rows of the run being opened that the fuzzy pass merged (match rule
-- probabilistic, in the staged plan: pf_staged_marked), each with the merge's place,
-- probability and evidence (pf_staged_matches, by the row's own key); its run_id is added by
-- the caller.

select
    marked.row_ord,
    marked.own_key,
    marked.place_key as answer_key,
    matches.matched_key,
    marked.matched_row,
    matches.matched_run_id,
    marked.match_rule,
    matches.match_probability,
    matches.evidence
from pf_staged_marked as marked
inner join pf_staged_matches as matches on marked.own_key = matches.place_key
where marked.match_rule = 'probabilistic'
