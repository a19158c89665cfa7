//! What clients store survives a restart on the same database file: models, projects, runs
//! with their settings and status, skill entries, and file constraints.

use serde_json::{json, Value};

use crate::support::TestApp;

#[actix_web::test]
async fn models_runs_skills_and_constraints_survive_a_restart() {
    let app = TestApp::start().await;
    let root = app.project_root("durable");
    app.write_document("skills", "sql_style", "Lowercase keywords.");
    let mut client = app.client().await;
    let project = client.init("durable", &root).await;
    client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-3000", "contextLength": 16000}),
        )
        .await;
    let started = client
        .ok(
            "startRun",
            json!({"model": "potato", "temperature": 0.4, "persona": "Terse.", "contextLimit": 4096}),
        )
        .await;
    let run = started["run"].as_str().unwrap();
    client
        .ok("run/rename", json!({"run": run, "name": "durable_run"}))
        .await;
    client
        .ok(
            "skill/add",
            json!({"run": "durable_run", "name": "sql_style"}),
        )
        .await;
    let aborted = client.start_run("potato").await;
    client.ok("run/abort", json!({"run": aborted})).await;
    client
        .ok(
            "get",
            json!({"path": root.join("src/app.js"), "persist": true, "readonly": true}),
        )
        .await;
    client
        .ok(
            "store",
            json!({"path": "build/**", "persist": true, "ignore": true}),
        )
        .await;
    let models_before = client.ok("getModels", json!({})).await;
    let runs_before = client.ok("getRuns", json!({})).await;
    let detail_before = client.ok("getRun", json!({"run": "durable_run"})).await;
    let constraints_before = app.constraints(project).await;
    assert_eq!(
        constraints_before,
        [
            ("src/app.js".to_string(), "readonly".to_string()),
            ("build/**".to_string(), "ignore".to_string()),
        ]
    );

    let app = app.restart().await;
    assert_eq!(
        client.closed().await,
        Some(1001),
        "the old server closed its clients"
    );
    let mut client = app.client().await;
    assert_eq!(
        client.ok("getModels", json!({})).await,
        models_before,
        "models are available before init"
    );
    assert_eq!(client.init("durable", &root).await, project);
    let mut runs_after = client.ok("getRuns", json!({})).await;
    let statuses: Vec<Value> = runs_after
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .map(|run| run["status"].take())
        .collect();
    assert_eq!(
        statuses,
        [json!(499), json!(499)],
        "a run left created (100) is aborted by the restart"
    );
    let mut runs_before = runs_before;
    for run in runs_before.as_array_mut().unwrap() {
        run["status"].take();
    }
    assert_eq!(runs_after, runs_before);
    let mut detail_after = client.ok("getRun", json!({"run": "durable_run"})).await;
    assert_eq!(detail_after["status"].take(), json!(499));
    let mut detail_before = detail_before;
    assert_eq!(detail_before["status"].take(), json!(100));
    assert_eq!(detail_after, detail_before);
    assert_eq!(detail_before["persona"], json!("Terse."));
    assert_eq!(
        detail_before["context"]["history"][0]["body"],
        json!("Lowercase keywords.")
    );
    assert_eq!(
        client.ok("getSkills", json!({"run": "durable_run"})).await[0]["name"],
        json!("sql_style")
    );
    assert_eq!(app.constraints(project).await, constraints_before);
    client
        .ok("store", json!({"path": "build/**", "clear": true}))
        .await;
    assert_eq!(
        app.constraints(project).await,
        [("src/app.js".to_string(), "readonly".to_string())]
    );
    let fresh = client.start_run("potato").await;
    assert_ne!(
        fresh, aborted,
        "new aliases do not collide with stored ones"
    );
}

#[actix_web::test]
async fn migrate_prepares_a_fresh_database_once_and_again() {
    let home = tempfile::tempdir().unwrap();
    let mut env = std::collections::HashMap::new();
    env.insert(
        "RUMMY_HOME".to_string(),
        home.path().join("nested").display().to_string(),
    );
    let settings = crate::support::settings(&env);
    rummy::app::migrate(&settings).unwrap();
    assert!(settings.storage.db_path.is_file());
    rummy::app::migrate(&settings).unwrap();
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn migrate_prepares_a_fresh_postgres_database_once_and_again() {
    let database = rummy::testing::ScratchDatabase::required();
    let home = tempfile::tempdir().unwrap();
    let mut env = std::collections::HashMap::new();
    env.insert("RUMMY_HOME".to_string(), home.path().display().to_string());
    env.insert("RUMMY_DATABASE_URL".to_string(), database.url().to_string());
    let settings = crate::support::settings(&env);
    rummy::app::migrate(&settings).unwrap();
    rummy::app::migrate(&settings).unwrap();
    assert!(database.database().is_migrated().unwrap());
    assert!(
        !settings.storage.db_path.exists(),
        "no SQLite file beside PostgreSQL"
    );
}

#[derive(diesel::QueryableByName)]
struct MmapSize {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    mmap_size: i64,
}

#[actix_web::test]
async fn the_mmap_size_setting_applies_to_the_servers_connection() {
    let app = TestApp::start_with(&[("RUMMY_MMAP_MB", "8")]).await;
    if app.database.is_some() {
        // A SQLite setting: PostgreSQL has no memory map of rummy's to size.
        return;
    }
    let read = app
        .server
        .on_database_thread(|conn| {
            use diesel::RunQueryDsl;
            diesel::sql_query("PRAGMA mmap_size").get_result::<MmapSize>(conn)
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.mmap_size, 8 * 1024 * 1024);
}
