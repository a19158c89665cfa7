-- Materialization reads v_model_context every turn. Most of a long run's entries end up
-- archived, so the read must touch only the visible ones: this partial index holds exactly
-- the rows the view's WHERE admits, and the planner uses it for `WHERE run_id = ?`.
CREATE INDEX idx_known_entries_visible ON known_entries (run_id)
WHERE fidelity <> 'archive' AND status <> 202;
