DROP TABLE oidc_logins;
DROP TABLE oidc_people;
ALTER TABLE console_sessions DROP COLUMN signed_in_with;
