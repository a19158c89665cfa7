//! `run/replay` of 10,000 missed notifications after a restart: a server (SQLite, on a home
//! of its own) publishes 10,000 `run/progress` notifications of one run, stops, and starts
//! again on the same home; each iteration is one client's `run/replay` from 0 (it saw none
//! of them), over its WebSocket, until the whole answer is read (about 1.1 MB: the frames read
//! from the event log, parsed and sent in one reply).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use criterion::Criterion;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};

use crate::app::{start, RunningServer};
use crate::config::Settings;
use crate::db::queries::{projects, runs};
use crate::hub::notifications::{Notification, ProgressStatus, RunProgress};

/// Notifications missed.
const MISSED: u64 = 10_000;

type Socket = actix_codec::Framed<BoxedSocket, Codec>;

/// The server's settings on `home`: a port of its own, the event log keeping every
/// notification replayed.
fn settings(home: &Path) -> Option<Settings> {
    let env: HashMap<String, String> = [
        ("RUMMY_HOME", home.display().to_string()),
        ("PORT", "0".to_owned()),
        ("RUMMY_LOG", "error".to_owned()),
        ("RUMMY_REPLAY_PER_RUN", MISSED.to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    Settings::load(&env, &config).ok()
}

/// A server on `home` that published `MISSED` notifications of one run of the project at
/// `root` (all written: the unit that reads the run's numbering follows the one that wrote
/// them), stopped; the run's alias.
async fn published(home: &Path, root: PathBuf) -> Option<String> {
    let server = start(settings(home)?).await.ok()?;
    let db = server.state.agent.db.clone();
    let root_text = root.display().to_string();
    let run = db
        .call(move |conn| {
            let project = projects::upsert_project(
                conn,
                &crate::db::models::ProjectInsertForm {
                    name: "replay".into(),
                    project_root: Some(root_text),
                },
            )?;
            let create = crate::db::models::run::RunCreateForm {
                project_id: project.id,
                model: "m".into(),
                temperature: None,
                persona: None,
                context_limit: None,
                created_by: None,
            };
            runs::create_run(conn, &create, 1)
        })
        .await
        .ok()?;
    for turn in 1..=MISSED {
        let progress = Notification::Progress(RunProgress {
            run: run.alias.clone(),
            turn: i64::try_from(turn).ok()?,
            status: ProgressStatus::Thinking,
        });
        crate::hub::publish(&db, run.project_id, run.id, &progress);
    }
    let seqs = db
        .call(move |conn| crate::db::queries::run_events::seqs(conn, run.id))
        .await
        .ok()??;
    server.stop().await;
    let written = seqs.last_seq - seqs.first_seq + 1;
    (u64::try_from(written).ok()? == MISSED).then_some(run.alias)
}

/// A client of `server` bound to the project at `root`.
async fn client(server: &RunningServer, root: &Path) -> Option<Socket> {
    let url = format!("ws://{}/", server.addr);
    let (_, mut socket) = awc::Client::new()
        .ws(url)
        .max_frame_size(64 << 20)
        .connect()
        .await
        .ok()?;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "init",
                      "params": {"name": "replay", "projectRoot": root}});
    answer(&mut socket, &init).await?;
    Some(socket)
}

/// Sends `request` on `socket` and reads frames up to its reply.
async fn answer(socket: &mut Socket, request: &Value) -> Option<Value> {
    socket
        .send(Message::Text(request.to_string().into()))
        .await
        .ok()?;
    while let Some(frame) = socket.next().await {
        if let Ok(Frame::Text(bytes)) = frame {
            let reply: Value = serde_json::from_slice(&bytes).ok()?;
            if reply.get("id") == request.get("id") {
                return Some(reply);
            }
        }
    }
    None
}

pub fn replay_after_a_restart(criterion: &mut Criterion) {
    let Ok(home) = tempfile::tempdir() else {
        return;
    };
    let root = home.path().join("project");
    if std::fs::create_dir_all(&root).is_err() {
        return;
    }
    let system = actix_web::rt::System::new();
    let Some(run) = system.block_on(published(home.path(), root.clone())) else {
        return;
    };
    let Some(server) =
        settings(home.path()).and_then(|settings| system.block_on(start(settings)).ok())
    else {
        return;
    };
    let Some(mut socket) = system.block_on(client(&server, &root)) else {
        return;
    };
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "run/replay",
                         "params": {"run": run, "since": 0}});
    let mut group = criterion.benchmark_group("replay_after_a_restart");
    group.measurement_time(Duration::from_secs(20));
    group.sample_size(20);
    group.bench_function("10k_missed", |bench| {
        bench.iter(|| {
            let replayed = system.block_on(answer(&mut socket, &request));
            let count = replayed
                .as_ref()
                .and_then(|reply| reply["result"]["notifications"].as_array())
                .map_or(0, Vec::len);
            assert_eq!(count as u64, MISSED, "{replayed:?}");
        });
    });
    group.finish();
    system.block_on(server.stop());
}
