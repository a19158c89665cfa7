DROP TABLE loop_places;
