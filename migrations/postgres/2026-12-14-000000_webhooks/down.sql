DROP TRIGGER trg_webhook_outbox ON run_events;
DROP FUNCTION webhook_outbox();
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
