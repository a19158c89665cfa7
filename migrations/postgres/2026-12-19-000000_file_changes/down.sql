DROP TABLE file_changes;
DELETE FROM run_actions WHERE action = 'revert';
ALTER TABLE run_actions DROP CONSTRAINT run_actions_action_check;
ALTER TABLE run_actions ADD CONSTRAINT run_actions_action_check
    CHECK (action IN ('accept', 'reject', 'error', 'abort', 'cancel'));
