DROP TRIGGER trg_webhook_outbox;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
