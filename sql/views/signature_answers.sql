-- signature_answers(have, want): whether an outcome of a run with signature `have` answers a
-- request of signature `want` (mode|attributes|summary flag), so a fresh one need not be bought
-- again and a stale one is due: the same signature; an enrichment that asked for existence and
-- open_closed answers a validation; an enrichment answers an enrichment of a subset of its
-- attributes (with a summary only if it had one). A validation answers only a validation.

create or replace macro signature_attributes(signature) as
    list_filter(string_split(split_part(signature, '|', 2), ','), lambda a: a != '');

create or replace macro signature_answers(have, want) as
    have = want
    or (
        split_part(have, '|', 1) = 'enrich'
        and split_part(want, '|', 1) = 'validate'
        and list_has_all(signature_attributes(have), ['existence', 'open_closed'])
    )
    or (
        split_part(have, '|', 1) = 'enrich'
        and split_part(want, '|', 1) = 'enrich'
        and list_has_all(signature_attributes(have), signature_attributes(want))
        and (split_part(want, '|', 3) != 'summary' or split_part(have, '|', 3) = 'summary')
    );
