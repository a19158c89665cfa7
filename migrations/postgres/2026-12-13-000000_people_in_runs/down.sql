DROP TABLE inbox_dismissals;
DROP TABLE run_presence;
