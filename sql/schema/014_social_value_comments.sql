-- 014 social value comments (spec reading 19): the url and handle columns of facebook,
-- instagram and tiktok also read a value sent as a plain string (instagram's and tiktok's
-- shapes are not shown in the spec). Only the column comments change.

comment on column enrichments.facebook_url is 'facebook_value.url (or the value itself when it is a plain string starting with http:// or https://).';
comment on column enrichments.facebook_handle is 'facebook_value.handle or .username (or the value itself, less a leading @, when it is another plain string).';
comment on column enrichments.instagram_url is 'instagram_value.url (or the value itself when it is a plain string starting with http:// or https://).';
comment on column enrichments.instagram_handle is 'instagram_value.handle or .username (or the value itself, less a leading @, when it is another plain string).';
comment on column enrichments.tiktok_url is 'tiktok_value.url (or the value itself when it is a plain string starting with http:// or https://).';
comment on column enrichments.tiktok_handle is 'tiktok_value.handle or .username (or the value itself, less a leading @, when it is another plain string).';
