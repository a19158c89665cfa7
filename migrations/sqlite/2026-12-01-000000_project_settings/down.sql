DROP TABLE project_settings;
