CREATE OR REPLACE FUNCTION memory_search(topic TEXT, body TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple',
               regexp_replace(topic, '[[:punct:][:space:][:cntrl:]]+', ' ', 'g')), 'A')
        || setweight(to_tsvector('simple',
               regexp_replace(body, '[[:punct:][:space:][:cntrl:]]+', ' ', 'g')), 'B')
$$;

UPDATE memory_facts SET topic = topic;
UPDATE memory_history SET topic = topic;

DROP FUNCTION searchable(TEXT);
