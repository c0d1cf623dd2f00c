-- social_url(value), social_handle(value): the profile URL and the handle of a facebook,
-- instagram or tiktok attribute value. The spec shows facebook's shape, {url, handle}, and not
-- instagram's or tiktok's (docs/spec-readings.md, 19): an object gives its url and handle; a
-- plain string is the URL when it starts with http:// or https://, else the handle (a leading
-- @ dropped); an object's `username` stands for a missing handle. The value itself is always
-- kept beside them (*_value).

create or replace macro social_url(value) as
    coalesce(
        value ->> 'url',
        case
            when json_type(value) = 'VARCHAR' and regexp_matches(value ->> '$', '^https?://')
                then value ->> '$'
        end
    );

create or replace macro social_handle(value) as
    coalesce(
        value ->> 'handle',
        value ->> 'username',
        case
            when json_type(value) = 'VARCHAR' and not regexp_matches(value ->> '$', '^https?://')
                then ltrim(value ->> '$', '@')
        end
    );
