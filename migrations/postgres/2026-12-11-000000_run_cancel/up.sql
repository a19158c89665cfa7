-- `run/cancel` (agent::verbs::cancel): a person stops their own loops of a run. A loop
-- records the connection whose request queued it (a number unique across instances,
-- `Instance::connection_key`), besides the person (`requested_by`): on a server without
-- people, a connection's own loops are those.
ALTER TABLE loops ADD COLUMN requested_on BIGINT;
-- `cancel` is one more action a person takes on a run.
ALTER TABLE run_actions DROP CONSTRAINT run_actions_action_check;
ALTER TABLE run_actions ADD CONSTRAINT run_actions_action_check
    CHECK (action IN ('accept', 'reject', 'error', 'abort', 'cancel'));
