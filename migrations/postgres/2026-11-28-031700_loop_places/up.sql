-- The places of the loops admitted under the bounds on active loops (see the SQLite
-- migration of the same version).
CREATE TABLE loop_places (
    id          BIGSERIAL PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    project_id  BIGINT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    person      TEXT
);
CREATE INDEX idx_loop_places_instance ON loop_places (instance_id);
CREATE INDEX idx_loop_places_project ON loop_places (project_id);
CREATE INDEX idx_loop_places_person ON loop_places (person);
