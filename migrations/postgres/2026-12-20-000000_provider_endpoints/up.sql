-- A provider's base URL and API key as an admin set them from the console (`addModel` with a
-- provider), laid over the environment's at start. The key is read only to call the
-- provider: no method returns it.
CREATE TABLE provider_endpoints (
    provider TEXT PRIMARY KEY,
    base_url TEXT,
    api_key  TEXT
);
