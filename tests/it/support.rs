//! `TestApp`: a real server per test, and a small JSON-RPC client over a real WebSocket.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use actix_codec::Framed;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};
use rummy::app::{start, start_with, RunningServer};
use rummy::config::{ConfigError, Settings};
use rummy::plugins::Plugins;
use rummy::testing::{Conn, Database, ScratchDatabase};
use serde_json::{json, Value};

use rummy::testing::fake_llm::FakeLlm;

/// How long a test waits for any one frame before failing.
const FRAME_WAIT: Duration = Duration::from_secs(300);

/// How long [`eventually`] waits before failing.
const EVENTUALLY_WAIT: Duration = Duration::from_secs(60);

/// How long [`Client::until_notified`] waits for its notification.
const NOTIFIED_WAIT: Duration = Duration::from_secs(60);

/// Held for reading by the tests that burn CPU on purpose (commands run to their CPU limit)
/// and for writing by the one that measures how promptly a server answers under load, so
/// that its measure is of the load it makes, not theirs.
pub(crate) static CPU_BURNERS: std::sync::LazyLock<tokio::sync::RwLock<()>> =
    std::sync::LazyLock::new(|| tokio::sync::RwLock::new(()));

/// How often [`eventually`] looks again.
const LOOK_AGAIN: Duration = Duration::from_millis(20);

/// Waits until `check` gives a value, looking again every 20 ms, and fails naming `what`
/// after a minute. Only for what the server announces to no client (a file, a row, a log
/// line, a process, a probe): what a notification announces is waited for on the socket.
pub(crate) async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + EVENTUALLY_WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited {EVENTUALLY_WAIT:?} for {what}"
        );
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}

/// A running server with its own home directory and database: a file in the home, or, when
/// `RUMMY_TEST_DATABASE_URL` names a PostgreSQL server, a database of its own there
/// (dropped after the test).
pub(crate) struct TestApp {
    pub server: RunningServer,
    pub home: tempfile::TempDir,
    pub env: HashMap<String, String>,
    pub database: Option<ScratchDatabase>,
}

impl TestApp {
    /// Starts a server on 127.0.0.1:0 with a fresh home.
    pub(crate) async fn start() -> TestApp {
        TestApp::start_with(&[]).await
    }

    /// Starts a server with extra environment variables.
    pub(crate) async fn start_with(extra: &[(&str, &str)]) -> TestApp {
        TestApp::start_with_tools(extra, |plugins| plugins).await
    }

    /// Starts a server with extra environment variables and the tools `register` adds to
    /// the bundled ones.
    pub(crate) async fn start_with_tools(
        extra: &[(&str, &str)],
        register: impl FnOnce(Plugins) -> Plugins,
    ) -> TestApp {
        TestApp::start_in(tempfile::tempdir().unwrap(), extra, register).await
    }

    /// [`TestApp::start_with_tools`] in `home`, prepared beforehand (`mcp.toml`, …).
    pub(crate) async fn start_in(
        home: tempfile::TempDir,
        extra: &[(&str, &str)],
        register: impl FnOnce(Plugins) -> Plugins,
    ) -> TestApp {
        let mut env = HashMap::new();
        env.insert("RUMMY_HOME".to_string(), home.path().display().to_string());
        env.insert("PORT".to_string(), "0".to_string());
        let log = std::env::var("RUMMY_TEST_LOG").unwrap_or_else(|_| "warn".to_string());
        env.insert("RUMMY_LOG".to_string(), log);
        let database = ScratchDatabase::from_environment();
        if let Some(database) = &database {
            env.insert("RUMMY_DATABASE_URL".to_string(), database.url().to_string());
        }
        for (key, value) in extra {
            env.insert(key.to_string(), value.to_string());
        }
        let settings = settings(&env);
        let _ = rummy::telemetry::init(&settings.log);
        let server = start_with(settings, register).await.unwrap();
        TestApp {
            server,
            home,
            env,
            database,
        }
    }

    /// Starts a server whose model `fake` is the scripted LLM, with a 32768-token context
    /// and one attempt per call (no retry delays); `extra` adds or overrides variables.
    pub(crate) async fn with_llm(llm: &FakeLlm, extra: &[(&str, &str)]) -> TestApp {
        TestApp::with_llm_and_tools(llm, extra, |plugins| plugins).await
    }

    /// [`TestApp::with_llm`] with the tools `register` adds to the bundled ones.
    pub(crate) async fn with_llm_and_tools(
        llm: &FakeLlm,
        extra: &[(&str, &str)],
        register: impl FnOnce(Plugins) -> Plugins,
    ) -> TestApp {
        let mut env = llm_env(llm);
        env.extend_from_slice(extra);
        TestApp::start_with_tools(&env, register).await
    }

    /// [`TestApp::with_llm`] with memory's settings at their defaults (the session notes on,
    /// as a server without configuration keeps them), `extra` added.
    pub(crate) async fn with_llm_default_memory(llm: &FakeLlm, extra: &[(&str, &str)]) -> TestApp {
        let mut env = llm_env(llm);
        env.retain(|(key, _)| !key.starts_with("RUMMY_MEMORY_"));
        env.extend_from_slice(extra);
        TestApp::start_with(&env).await
    }

    /// [`TestApp::with_llm`] in `home`, prepared beforehand.
    pub(crate) async fn with_llm_in(home: tempfile::TempDir, llm: &FakeLlm) -> TestApp {
        TestApp::start_in(home, &llm_env(llm), |plugins| plugins).await
    }

    /// Stops this server and starts another on the same home and database.
    pub(crate) async fn restart(self) -> TestApp {
        let TestApp {
            server,
            home,
            env,
            database,
        } = self;
        server.stop().await;
        // A process another test forks in this one holds a copy of the home lock's file
        // from its fork to its exec (a sandboxed command's set-up runs between them), so
        // the lock may outlive the stop by that long.
        let server = eventually(
            "the stopped server's home to be let go",
            async || match start(settings(&env)).await {
                Ok(server) => Some(server),
                Err(error) if error.to_string().contains("is serving the home") => None,
                Err(error) => panic!("the server did not start again: {error:#}"),
            },
        )
        .await;
        TestApp {
            server,
            home,
            env,
            database,
        }
    }

    /// Its store, for SQL of the test's own ([`crate::stored`]).
    pub(crate) fn database(&self) -> Database {
        self.server.database()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    /// A connected client.
    pub(crate) async fn client(&self) -> Client {
        Client::connect(&format!("ws://{}/", self.addr())).await
    }

    /// A client already bound to a project rooted in a fresh directory.
    pub(crate) async fn client_in_project(&self, name: &str) -> (Client, PathBuf) {
        let root = self.project_root(name);
        let mut client = self.client().await;
        client.init(name, &root).await;
        (client, root)
    }

    /// The root directory of project `name`, created under the home.
    pub(crate) fn project_root(&self, name: &str) -> PathBuf {
        let root = self.home().join(format!("project-{name}"));
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    /// What `read` finds in its store, on a connection of its own ([`crate::stored`]).
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&mut Conn) -> T + Send + 'static,
    ) -> T {
        let database = self.database();
        actix_web::rt::task::spawn_blocking(move || read(&mut database.connect().unwrap()))
            .await
            .unwrap()
    }

    /// The project's file constraints as `(pattern, visibility)`, read from the database.
    pub(crate) async fn constraints(&self, project: i64) -> Vec<(String, String)> {
        self.read(move |conn| crate::stored::constraints(conn, project))
            .await
    }

    /// Writes `$RUMMY_HOME/<kind>/<name>.md` (kind: `skills` or `personas`); returns its path.
    pub(crate) fn write_document(&self, kind: &str, name: &str, body: &str) -> PathBuf {
        let directory = self.home().join(kind);
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join(format!("{name}.md"));
        std::fs::write(&path, body).unwrap();
        path
    }
}

/// The variables that make `fake` the scripted LLM, with a 32768-token context and one
/// attempt per call, and no session notes (their sidecar calls would take the script's
/// steps; `tests/it/session_notes.rs` turns them on).
pub(crate) fn llm_env(llm: &FakeLlm) -> Vec<(&'static str, &str)> {
    vec![
        ("OPENAI_BASE_URL", llm.base_url()),
        ("RUMMY_MODEL_fake", "openai/fake"),
        ("RUMMY_CONTEXT_fake", "32768"),
        ("RUMMY_LLM_ATTEMPTS", "1"),
        ("RUMMY_MEMORY_SESSION_TOKENS", "0"),
    ]
}

/// `home/project` with one source file: a project root for a server started in `home`.
pub(crate) fn project_root(home: &Path) -> PathBuf {
    let root = home.join("project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("app.js"), "listen(3000);\n").unwrap();
    root
}

/// The system message of a chat completion request the fake LLM received.
pub(crate) fn system_message(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The user message of a chat completion request the fake LLM received.
pub(crate) fn user_message(request: &Value) -> String {
    request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn settings(env: &HashMap<String, String>) -> Settings {
    try_settings(env).unwrap()
}

/// The key of a test's environment naming the directory `$RUMMY_ENV.toml` is read from
/// (the repository's `config/` without it); the server reads no such variable.
pub(crate) const TEST_CONFIG_DIR: &str = "TEST_CONFIG_DIR";

/// The settings for `env`, or why they are refused.
pub(crate) fn try_settings(env: &HashMap<String, String>) -> Result<Settings, ConfigError> {
    let config_dir = match env.get(TEST_CONFIG_DIR) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("config"),
    };
    Settings::load(env, &config_dir)
}

/// A JSON-RPC client that keeps notifications aside while it waits for replies.
pub(crate) struct Client {
    framed: Framed<BoxedSocket, Codec>,
    next_id: u64,
    notifications: VecDeque<Value>,
    replies: HashMap<String, Value>,
}

impl Client {
    pub(crate) async fn connect(url: &str) -> Client {
        Client::connect_with(awc::Client::new().ws(url)).await
    }

    /// A client connected by `request`, built with headers or from a local address of the
    /// test's choosing.
    pub(crate) async fn connect_with(request: awc::ws::WebsocketsRequest) -> Client {
        let (_, framed) = request
            .max_frame_size(64 * 1024 * 1024)
            .connect()
            .await
            .unwrap();
        Client::from_framed(framed)
    }

    /// A client over a socket already opened.
    pub(crate) fn from_framed(framed: Framed<BoxedSocket, Codec>) -> Client {
        Client {
            framed,
            next_id: 0,
            notifications: VecDeque::new(),
            replies: HashMap::new(),
        }
    }

    /// `init` on `name` rooted at `root`; returns the project id.
    pub(crate) async fn init(&mut self, name: &str, root: &Path) -> i64 {
        let result = self
            .ok("init", json!({"name": name, "projectRoot": root}))
            .await;
        result["projectId"].as_i64().unwrap()
    }

    /// Adds the model alias `alias` (an OpenAI-compatible model with a known context).
    pub(crate) async fn add_model(&mut self, alias: &str) {
        self.ok(
            "addModel",
            json!({"alias": alias, "actual": format!("openai/{alias}"), "contextLength": 8192}),
        )
        .await;
    }

    /// `startRun` on `model`; returns the new run's alias.
    pub(crate) async fn start_run(&mut self, model: &str) -> String {
        let result = self.ok("startRun", json!({"model": model})).await;
        result["run"].as_str().unwrap().to_string()
    }

    /// Sends a raw text frame.
    pub(crate) async fn send_text(&mut self, text: impl Into<String>) {
        self.framed
            .send(Message::Text(text.into().into()))
            .await
            .unwrap();
    }

    /// Sends a raw binary frame.
    pub(crate) async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.framed
            .send(Message::Binary(bytes.into()))
            .await
            .unwrap();
    }

    /// Sends a request and returns its id.
    pub(crate) async fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_text(request.to_string()).await;
        id
    }

    /// Calls a method and returns the whole reply.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        self.reply(&id).await
    }

    /// Calls a method that must succeed; returns its result.
    pub(crate) async fn ok(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call(method, params).await;
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        reply["result"].clone()
    }

    /// Sends `act` with `prompt` to the model `fake`, which must stop at 202 with a proposal;
    /// the run and the first proposal's path.
    pub(crate) async fn act_until_proposal(&mut self, prompt: &str) -> (String, String) {
        let proposed = self
            .ok("act", json!({"model": "fake", "prompt": prompt}))
            .await;
        assert_eq!(proposed["status"], json!(202), "{proposed}");
        (
            proposed["run"].as_str().unwrap().to_string(),
            proposed["proposed"][0]["path"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    }

    /// `(path, status)` of the run's entries under `pattern`, by path.
    /// The paths of run `run`'s entries matching `pattern`, as `getEntries` lists them.
    pub(crate) async fn paths(&mut self, run: &str, pattern: &str) -> Vec<String> {
        self.statuses(run, pattern)
            .await
            .into_iter()
            .map(|(path, _)| path)
            .collect()
    }

    pub(crate) async fn statuses(&mut self, run: &str, pattern: &str) -> Vec<(String, i64)> {
        let entries = self
            .ok("getEntries", json!({"run": run, "pattern": pattern}))
            .await;
        entries
            .as_array()
            .expect("getEntries answers a list")
            .iter()
            .map(|entry| {
                let path = entry["path"].as_str().unwrap_or_default().to_string();
                (path, entry["status"].as_i64().unwrap_or_default())
            })
            .collect()
    }

    /// Calls a method that must fail; returns (code, message).
    pub(crate) async fn err(&mut self, method: &str, params: Value) -> (i64, String) {
        let reply = self.call(method, params).await;
        let error = reply
            .get("error")
            .unwrap_or_else(|| panic!("{method} should fail: {reply}"));
        (
            error["code"].as_i64().unwrap(),
            error["message"].as_str().unwrap().to_string(),
        )
    }

    /// Waits for the reply with this id.
    pub(crate) async fn reply(&mut self, id: &Value) -> Value {
        let key = id.to_string();
        loop {
            if let Some(reply) = self.replies.remove(&key) {
                return reply;
            }
            let message = self.next_json().await.expect("connection closed");
            self.sort(message);
        }
    }

    /// Waits for the next notification with this method.
    pub(crate) async fn notification(&mut self, method: &str) -> Value {
        loop {
            if let Some(index) = self
                .notifications
                .iter()
                .position(|message| message["method"] == method)
            {
                return self.notifications.remove(index).unwrap();
            }
            let message = self.next_json().await.expect("connection closed");
            self.sort(message);
        }
    }

    /// Takes `method` notifications until one whose params satisfy `wanted` (the ones before
    /// it are dropped) and returns it; fails after a minute.
    pub(crate) async fn until_notified(
        &mut self,
        method: &str,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        let awaited = async {
            loop {
                let notification = self.notification(method).await;
                if wanted(&notification["params"]) {
                    return notification;
                }
            }
        };
        tokio::time::timeout(NOTIFIED_WAIT, awaited)
            .await
            .unwrap_or_else(|_| panic!("no awaited {method} within {NOTIFIED_WAIT:?}"))
    }

    /// Waits for the next notification, whatever its method, in arrival order.
    pub(crate) async fn next_notification(&mut self) -> Value {
        loop {
            if let Some(notification) = self.notifications.pop_front() {
                return notification;
            }
            let message = self.next_json().await.expect("connection closed");
            self.sort(message);
        }
    }

    /// Notifications received so far and not yet taken.
    pub(crate) fn pending_notifications(&self) -> &VecDeque<Value> {
        &self.notifications
    }

    fn sort(&mut self, message: Value) {
        if message.get("method").is_some() && message.get("id").is_none() {
            self.notifications.push_back(message);
        } else {
            let key = message
                .get("id")
                .cloned()
                .unwrap_or(Value::Null)
                .to_string();
            self.replies.insert(key, message);
        }
    }

    /// The next JSON message, or `None` when the server closed the connection.
    pub(crate) async fn next_json(&mut self) -> Option<Value> {
        match self.next_frame().await? {
            Frame::Text(bytes) => Some(serde_json::from_slice(&bytes).unwrap()),
            other => panic!("unexpected frame {other:?}"),
        }
    }

    /// The next data or close frame, answering pings; `None` when the stream ended.
    pub(crate) async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let frame = tokio::time::timeout(FRAME_WAIT, self.framed.next())
                .await
                .expect("no frame from the server in time")?;
            match frame {
                Ok(Frame::Ping(payload)) => {
                    self.framed.send(Message::Pong(payload)).await.unwrap();
                }
                Ok(Frame::Pong(_)) => {}
                Ok(frame) => return Some(frame),
                Err(_) => return None,
            }
        }
    }

    /// Reads frames without answering pings until the server closes; returns how many
    /// pings came and the close code.
    pub(crate) async fn frames_without_answering_pings(&mut self) -> (usize, Option<u16>) {
        let mut pings = 0;
        loop {
            let frame = tokio::time::timeout(FRAME_WAIT, self.framed.next())
                .await
                .expect("no frame from the server in time");
            match frame {
                Some(Ok(Frame::Ping(_))) => pings += 1,
                Some(Ok(Frame::Close(reason))) => {
                    return (pings, reason.map(|reason| reason.code.into()))
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return (pings, None),
            }
        }
    }

    /// Waits for the server to close the connection; returns the close code.
    pub(crate) async fn closed(&mut self) -> Option<u16> {
        loop {
            match self.next_frame().await {
                Some(Frame::Close(reason)) => return reason.map(|reason| reason.code.into()),
                Some(_) => continue,
                None => return None,
            }
        }
    }
}

/// A scripted turn of 100 tokens (90 prompt, 10 completion) that learns something, so its
/// loop goes on.
pub(crate) fn learning_100_tokens(slug: &str) -> rummy::testing::fake_llm::Step {
    use rummy::testing::fake_llm::{Reply, Step, Usage};
    Step::Reply(
        Reply::new(format!(
            "<known path=\"known://{slug}\">Learned {slug}.</known><update>learning</update>"
        ))
        .with_usage(Usage {
            prompt_tokens: 90,
            cached_tokens: 0,
            completion_tokens: 10,
            cost: 0.0,
        }),
    )
}
