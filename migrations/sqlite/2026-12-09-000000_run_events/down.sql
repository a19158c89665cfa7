DROP TABLE run_events;
DROP TABLE run_event_seqs;
