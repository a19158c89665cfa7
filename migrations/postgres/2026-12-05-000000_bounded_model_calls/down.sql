-- The rows brought within bounds stay so: what they held before was no count.
SELECT 1;
