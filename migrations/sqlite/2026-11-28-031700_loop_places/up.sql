-- The places of the loops admitted under the bounds on active loops per project and per
-- person (agent::admission), counted in the store so that the bounds hold across the
-- instances sharing it (PostgreSQL; on SQLite there is only ever one, which counts in
-- memory alone). A row lives from the loop's admission to its end; deleting an instance's
-- row (a clean stop, or another instance finding it expired) gives its places back.
CREATE TABLE loop_places (
    id          INTEGER PRIMARY KEY NOT NULL,
    instance_id TEXT NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
    project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- The person of the users file who asked; NULL for the operator, bounded per connection
    -- (a connection lives on one instance).
    person      TEXT
);
CREATE INDEX idx_loop_places_instance ON loop_places (instance_id);
CREATE INDEX idx_loop_places_project ON loop_places (project_id);
CREATE INDEX idx_loop_places_person ON loop_places (person);
