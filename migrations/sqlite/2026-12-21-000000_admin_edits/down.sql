DROP TABLE admin_changes;
DROP TABLE stored_caps;
