DROP TABLE provider_endpoints;
