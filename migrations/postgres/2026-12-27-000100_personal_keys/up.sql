-- Whether a project's runs must call providers with their starter's own key (`keys/required`,
-- set by admins): a run whose starter has none for its provider stops before any call.
ALTER TABLE projects ADD COLUMN personal_keys_required BOOLEAN NOT NULL DEFAULT FALSE;
-- Whose key paid for a model call: the person whose own provider key it carried, or NULL
-- for the server's key.
ALTER TABLE model_calls ADD COLUMN key_of TEXT;
