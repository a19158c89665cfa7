//! Transcripts: each run's exchanges in `$RUMMY_HOME/transcripts/<project>-<id>/<run>.txt`,
//! never mixed with another project's, and removed after `RUMMY_RETENTION_DAYS`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::support::{eventually, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The file's text once it holds `ended` (the transcript writer is a thread of its own).
async fn finished_transcript(path: &Path) -> String {
    let what = format!("a finished transcript at {}", path.display());
    eventually(&what, async || {
        let text = std::fs::read_to_string(path).ok()?;
        text.contains("# ended").then_some(text)
    })
    .await
}

/// Asks once in project `name`; returns where its run's transcript belongs.
async fn ask_in_project(app: &TestApp, name: &str, prompt: &str) -> PathBuf {
    let root = app.project_root(name);
    let mut client = app.client().await;
    let project = client.init(name, &root).await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap();
    app.home()
        .join("transcripts")
        .join(format!("{name}-{project}"))
        .join(format!("{run}.txt"))
}

#[actix_web::test]
async fn each_run_keeps_its_transcript_in_its_projects_folder() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>shop answer</summarize>"),
        Step::reply("<summarize>bank answer</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let shop = ask_in_project(&app, "shop", "the shop's secret prompt").await;
    let bank = ask_in_project(&app, "bank", "the bank's secret prompt").await;
    let shop = finished_transcript(&shop).await;
    let bank = finished_transcript(&bank).await;
    assert!(shop.contains("the shop's secret prompt") && shop.contains("shop answer"));
    assert!(bank.contains("the bank's secret prompt") && bank.contains("bank answer"));
    assert!(
        !shop.contains("bank") && !bank.contains("shop"),
        "{shop}\n{bank}"
    );
    assert!(!app.home().join("last_run.txt").exists());
}

#[actix_web::test]
async fn transcripts_older_than_the_retention_are_removed_at_start() {
    let app = TestApp::start_with(&[("RUMMY_RETENTION_DAYS", "7")]).await;
    let folder = app.home().join("transcripts");
    std::fs::create_dir_all(folder.join("old-1")).unwrap();
    std::fs::create_dir_all(folder.join("mixed-2")).unwrap();
    for file in ["old-1/a.txt", "mixed-2/b.txt", "mixed-2/c.txt"] {
        std::fs::write(folder.join(file), "transcript").unwrap();
    }
    let eight_days_ago = SystemTime::now() - Duration::from_secs(8 * 86_400);
    for stale in ["old-1/a.txt", "mixed-2/b.txt"] {
        std::fs::File::options()
            .write(true)
            .open(folder.join(stale))
            .unwrap()
            .set_modified(eight_days_ago)
            .unwrap();
    }
    let app = app.restart().await;
    let folder = app.home().join("transcripts");
    assert!(!folder.join("old-1").exists());
    assert!(!folder.join("mixed-2/b.txt").exists());
    assert!(folder.join("mixed-2/c.txt").exists());
}
