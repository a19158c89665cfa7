//! `rummy acp` (the real binary, local mode: the server in its own process on a fresh home;
//! remote mode: a client of a `rummy serve` with a users file) driven by both official ACP
//! client SDKs as an editor would, against the scripted model: the TypeScript SDK
//! (`tests/acp/drive.mjs`, `@agentclientprotocol/sdk` pinned by `tests/acp/package-lock.json`)
//! and the Python SDK (`tests/acp/drive.py`, `agent-client-protocol` pinned by
//! `tests/acp/requirements.txt`). Both drivers print what the editor saw in one shape, so
//! each scenario below is one function run once per SDK (`acp::ts::…` and `acp::py::…`).
//!
//! They need node and `npm ci` in tests/acp, and a venv with the Python SDK in
//! tests/acp/.venv, which `tests/run.sh` makes: they are `#[ignore]`d, so that a plain
//! `cargo test` lists them as ignored instead of counting them as passed, and run.sh runs
//! them (`--ignored`). Run without their SDK, they fail and say why.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::llm_env;
use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Reply, Step};

mod console_story;
mod three_clients;

/// The official ACP client SDK a scenario is driven with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sdk {
    TypeScript,
    Python,
}

impl Sdk {
    /// The driver's command in `tests` (tests/acp), its SDK checked to be installed.
    fn driver(self, tests: &Path) -> tokio::process::Command {
        match self {
            Sdk::TypeScript => {
                assert!(
                    tests.join("node_modules/@agentclientprotocol/sdk").exists(),
                    "{NEEDS_NODE}"
                );
                let mut node = tokio::process::Command::new("node");
                node.arg("drive.mjs");
                node
            }
            Sdk::Python => {
                let python = tests.join(".venv/bin/python");
                assert!(python.exists(), "{NEEDS_PYTHON}");
                let mut python = tokio::process::Command::new(python);
                python.arg("drive.py");
                python
            }
        }
    }
}

const NEEDS_NODE: &str = "needs node and `npm ci` in tests/acp: tests/run.sh does both";
const NEEDS_PYTHON: &str =
    "needs the ACP Python SDK in tests/acp/.venv (tests/acp/requirements.txt): tests/run.sh installs it";

/// Each scenario named, as a test per SDK: `ts::<name>` and `py::<name>`.
macro_rules! with_each_sdk {
    ($($name:ident),* $(,)?) => {
        mod ts {
            $(
                #[actix_web::test]
                #[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
                async fn $name() {
                    super::$name(super::Sdk::TypeScript).await
                }
            )*
        }
        mod py {
            $(
                #[actix_web::test]
                #[ignore = "needs the ACP Python SDK in tests/acp/.venv: tests/run.sh installs it"]
                async fn $name() {
                    super::$name(super::Sdk::Python).await
                }
            )*
        }
    };
}

with_each_sdk!(
    a_prompt_streams_the_models_text_and_commands_and_ends_the_turn,
    a_paced_reply_reaches_the_editor_in_pieces_whose_join_is_the_reply,
    the_turn_limit_ends_the_turn_max_turn_requests,
    a_loop_paused_at_a_spend_cap_ends_the_turn_saying_so,
    a_models_refusal_ends_the_turn_refusal_with_its_text,
    an_allowed_edit_is_written_through_the_editor,
    a_rejected_edit_changes_nothing,
    a_cancel_during_a_slow_model_call_ends_the_turn_cancelled,
    malformed_frames_get_errors_and_the_agent_keeps_serving,
    ask_mode_asks_and_an_unknown_mode_is_refused,
    an_allowed_command_runs_in_the_editors_terminal_and_its_output_reaches_the_model,
    an_allowed_command_of_a_project_that_runs_commands_on_the_server_runs_there,
    a_command_allowed_always_is_not_asked_about_again_in_the_session,
    resources_of_the_project_become_entries_the_model_sees_and_others_stay_text,
    remote_a_person_works_in_their_project_through_a_team_server,
    remote_a_project_outside_the_persons_is_refused_with_rummys_error,
    remote_without_a_token_the_editor_signs_in_with_the_token_file,
    remote_over_wss_through_a_tls_front,
    an_mcp_server_of_the_editors_session_is_used_by_the_model,
    the_models_open_questions_are_the_sessions_plan,
    remote_the_editors_mcp_servers_are_the_team_servers_choice,
    remote_a_refused_token_says_what_to_do_and_the_editor_signs_in_anew,
    a_finished_run_is_loaded_in_a_new_agent_replayed_and_continued,
    skills_and_personas_are_slash_commands_that_reach_the_model,
    a_model_chosen_in_the_session_runs_its_next_prompt,
    a_question_is_answered_in_free_text_through_the_editors_form,
    without_forms_an_open_question_is_answered_in_the_next_prompt,
    a_cancel_without_a_prompt_in_flight_leaves_the_run_alone,
    a_cancel_while_a_proposal_is_asked_about_ends_the_turn_cancelled_and_withdraws_it,
    a_cancel_while_the_editors_terminal_runs_a_command_kills_it_and_ends_the_turn_cancelled,
    remote_a_proposal_another_client_accepts_is_withdrawn_from_the_editor_and_never_written,
    two_edits_of_one_file_are_two_tool_calls_of_the_session,
    remote_an_editors_cancel_stops_its_prompt_and_a_colleagues_queued_prompt_runs_to_its_end,
    remote_a_revert_raised_on_the_idle_run_is_shown_at_once_and_asked_at_the_next_prompt,
);

mod personal_tokens;

/// What the editor saw of one scenario, with the home and project it ran in.
pub(crate) struct Drive {
    pub seen: Value,
    project: PathBuf,
    home: tempfile::TempDir,
}

/// A running server `rummy acp --url` connects to, and the variables the driver (and so
/// the agent) gets for it: the person's token (`RUMMY_AUTH_TOKEN`), a token file, a CA.
pub(crate) struct Remote {
    url: String,
    env: Vec<(&'static str, String)>,
}

impl Remote {
    /// `url` with the person's `token` in `RUMMY_AUTH_TOKEN`.
    fn with_token(url: String, token: &str) -> Remote {
        Remote {
            url,
            env: vec![("RUMMY_AUTH_TOKEN", token.to_string())],
        }
    }
}

impl Drive {
    /// Runs `scenario` of `sdk`'s driver against a local `rummy acp` on a fresh home whose
    /// project `demo` holds `a.txt` ("one\ntwo\n").
    async fn run(sdk: Sdk, scenario: &str, llm: &FakeLlm) -> Drive {
        Drive::run_with(sdk, scenario, llm, &[]).await
    }

    /// [`Drive::run`] with these settings in the agent's environment.
    async fn run_with(sdk: Sdk, scenario: &str, llm: &FakeLlm, env: &[(&str, &str)]) -> Drive {
        let home = tempfile::tempdir().unwrap();
        Drive::run_in(sdk, scenario, llm, home, "demo", None, env).await
    }

    /// [`Drive::run`] in `home`, the project named `name`, against `remote` when given, with
    /// `env` in the agent's environment.
    async fn run_in(
        sdk: Sdk,
        scenario: &str,
        llm: &FakeLlm,
        home: tempfile::TempDir,
        name: &str,
        remote: Option<Remote>,
        env: &[(&str, &str)],
    ) -> Drive {
        let mut all = llm_env(llm);
        all.extend_from_slice(env);
        Drive::spawn(sdk, scenario, home, name, remote, &all).await
    }

    /// Runs `scenario` of `sdk`'s driver against a local `rummy acp` on `home`, whose project
    /// `name` holds `a.txt` ("one\ntwo\n"), with `env` (the model's settings among them) in
    /// the agent's environment, against `remote` when given.
    pub(crate) async fn spawn(
        sdk: Sdk,
        scenario: &str,
        home: tempfile::TempDir,
        name: &str,
        remote: Option<Remote>,
        env: &[(&str, &str)],
    ) -> Drive {
        let seen = Drive::seen_in(sdk, scenario, home.path(), name, remote, env).await;
        Drive {
            seen,
            project: home.path().join(name),
            home,
        }
    }

    /// What the editor saw of `scenario` of `sdk`'s driver, run against a `rummy acp` on
    /// `home` (which another driver may share), in the project `name` (`a.txt`, "one\ntwo\n",
    /// made unless it exists).
    async fn seen_in(
        sdk: Sdk,
        scenario: &str,
        home: &Path,
        name: &str,
        remote: Option<Remote>,
        env: &[(&str, &str)],
    ) -> Value {
        let project = home.join(name);
        std::fs::create_dir_all(&project).unwrap();
        if !project.join("a.txt").exists() {
            std::fs::write(project.join("a.txt"), "one\ntwo\n").unwrap();
        }
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp");
        let mut driver = sdk.driver(&tests);
        driver.env_clear();
        if let Some(remote) = remote {
            driver.env("ACP_URL", remote.url).envs(remote.env);
        }
        let output = driver
            .current_dir(&tests)
            .arg(env!("CARGO_BIN_EXE_rummy"))
            .arg(scenario)
            .arg(&project)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home)
            .env("RUMMY_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .output()
            .await
            .unwrap_or_else(|error| panic!("the {sdk:?} driver did not start: {error}"));
        assert!(
            output.status.success(),
            "the {sdk:?} driver failed in {scenario}: {:?} {}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)))
    }

    /// Runs `scenario` in a new agent on the same home and project.
    async fn again(self, sdk: Sdk, scenario: &str, llm: &FakeLlm, env: &[(&str, &str)]) -> Drive {
        let name = self
            .project
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        Drive::run_in(sdk, scenario, llm, self.home, &name, None, env).await
    }

    fn updates(&self, kind: &str) -> Vec<&Value> {
        self.seen["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }

    pub(crate) fn messages(&self) -> Vec<&str> {
        self.updates("agent_message_chunk")
            .iter()
            .map(|update| update["content"]["text"].as_str().unwrap())
            .collect()
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(name)).ok()
    }

    /// The editor was told the agent's version and modes, read nothing but frames on
    /// stdout, saw a clean exit, and a prompt for a session it never made was refused by
    /// name.
    pub(crate) fn assert_clean_session(&self) {
        assert_eq!(self.seen["initialize"]["protocolVersion"], json!(1));
        assert_eq!(self.seen["initialize"]["agentInfo"]["name"], json!("rummy"));
        assert_eq!(
            self.seen["initialize"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            json!(true)
        );
        assert_eq!(self.seen["session"]["modes"]["currentModeId"], json!("act"));
        let errors = self.seen["errors"].as_array().unwrap();
        assert!(
            errors
                .iter()
                .all(|error| error.get("stdoutNotJson").is_none()),
            "stdout carries ACP frames only: {errors:?}"
        );
        let unknown = errors
            .iter()
            .find(|error| error["what"] == "unknown session")
            .expect("a prompt for an unknown session fails");
        assert_eq!(unknown["code"], json!(-32602));
        assert_eq!(unknown["data"], json!("no session no-such-session"));
        assert_eq!(self.seen["exit"], json!({"code": 0, "signal": null}));
    }
}

const EDIT: &str = "<set path=\"a.txt\"><<<<<<< SEARCH\ntwo\n=======\nTWO\n>>>>>>> REPLACE</set>\
                    <update>Editing a.txt.</update>";

async fn a_prompt_streams_the_models_text_and_commands_and_ends_the_turn(sdk: Sdk) {
    let llm = reading_a_txt();
    let drive = Drive::run(sdk, "stream", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
    let reads: Vec<&Value> = drive
        .updates("tool_call")
        .into_iter()
        .filter(|call| call["kind"] == "read")
        .collect();
    assert_eq!(reads.len(), 1, "{:?}", drive.seen["updates"]);
    assert_eq!(reads[0]["status"], json!("completed"));
    assert_eq!(
        reads[0]["locations"],
        json!([{"path": drive.project.join("a.txt")}])
    );
    let system = crate::support::system_message(&llm.requests()[0]);
    assert!(system.contains("<sh>command</sh>"), "act mode, the default");
    let prompt = crate::support::user_message(&llm.requests()[0]);
    assert!(prompt.contains("please do the task"), "{prompt}");
    assert_eq!(llm.requests().len(), 2);
}

async fn a_paced_reply_reaches_the_editor_in_pieces_whose_join_is_the_reply(sdk: Sdk) {
    let words = "The words come one after the other, as a model writes them. ".repeat(3);
    let llm = FakeLlm::start([
        Step::Paced(
            Reply::new("<update>Reading.</update><get path=\"a.txt\"/>"),
            Duration::from_millis(20),
        ),
        Step::Paced(
            Reply::new(format!("<summarize>\n{words}\n</summarize>")),
            Duration::from_millis(20),
        ),
    ]);
    let drive = Drive::run(sdk, "stream", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let messages = drive.messages();
    assert!(messages.len() > 2, "the words came in pieces: {messages:?}");
    assert_eq!(
        messages.concat(),
        format!("Reading.{}", words.trim()),
        "each word once, the tags and the read left out"
    );
    assert_eq!(llm.requests().len(), 2);
}

async fn the_turn_limit_ends_the_turn_max_turn_requests(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<known path=\"known://one\">1</known><update>Step one.</update>"),
        Step::reply("<known path=\"known://two\">2</known><update>Step two.</update>"),
        Step::reply("<summarize>never asked</summarize>"),
    ]);
    let drive = Drive::run_with(sdk, "stream", &llm, &[("RUMMY_MAX_TURNS", "2")]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["max_turn_requests"]));
    assert_eq!(drive.messages(), ["Step one.", "Step two."]);
    assert_eq!(llm.requests().len(), 2);
}

async fn a_loop_paused_at_a_spend_cap_ends_the_turn_saying_so(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<known path=\"known://one\">1</known><update>Step one.</update>"),
        Step::reply("<summarize>never asked</summarize>"),
    ]);
    let drive = Drive::run_with(sdk, "stream", &llm, &[("RUMMY_CAP_DAY_TOKENS", "1")]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let messages = drive.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], "Step one.");
    assert!(
        messages[1].starts_with("Paused: the server's cap (1 tokens per day) is reached"),
        "{messages:?}"
    );
    assert_eq!(llm.requests().len(), 1, "the second call was refused");
}

async fn a_models_refusal_ends_the_turn_refusal_with_its_text(sdk: Sdk) {
    let llm = FakeLlm::start([Step::Json(json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": null,
                                 "refusal": "I cannot help with that."}}],
    }))]);
    let drive = Drive::run(sdk, "stream", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["refusal"]));
    assert_eq!(drive.messages(), ["I cannot help with that."]);
    assert_eq!(llm.requests().len(), 1);
}

async fn an_allowed_edit_is_written_through_the_editor(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply(EDIT),
        Step::reply("<summarize>Edited.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "edit-allow", &llm).await;
    drive.assert_clean_session();
    let permissions = drive.seen["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1);
    let asked = &permissions[0];
    assert_eq!(asked["toolCall"]["toolCallId"], json!("set://a.txt"));
    let options: Vec<&Value> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| &option["kind"])
        .collect();
    assert_eq!(options, [&json!("allow_once"), &json!("reject_once")]);
    let shown = drive
        .updates("tool_call")
        .into_iter()
        .find(|call| call["toolCallId"] == "set://a.txt")
        .expect("the edit is shown before it is asked about");
    assert_eq!(shown["kind"], json!("edit"));
    let status = shown.get("status").cloned().unwrap_or(json!("pending"));
    assert_eq!(status, json!("pending"), "pending, said or by default");
    assert_eq!(
        shown["content"],
        json!([{"type": "diff", "path": drive.project.join("a.txt"),
                "oldText": "one\ntwo\n", "newText": "one\nTWO\n"}])
    );
    assert_eq!(
        drive.seen["writes"],
        json!([{"sessionId": drive.seen["session"]["sessionId"],
                "path": drive.project.join("a.txt"), "content": "one\nTWO\n"}])
    );
    assert_eq!(drive.file("a.txt").as_deref(), Some("one\nTWO\n"));
    let done = drive
        .updates("tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "set://a.txt")
        .expect("the edit's end is shown");
    assert_eq!(done["status"], json!("completed"));
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Editing a.txt.", "Edited."]);
}

async fn two_edits_of_one_file_are_two_tool_calls_of_the_session(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply(EDIT),
        Step::reply(
            "<set path=\"a.txt\"><<<<<<< SEARCH\none\n=======\nONE\n>>>>>>> REPLACE</set>\
             <update>Editing it again.</update>",
        ),
        Step::reply("<summarize>Edited twice.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "edit-allow", &llm).await;
    drive.assert_clean_session();
    let asked: Vec<&Value> = drive.seen["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|asked| &asked["toolCall"]["toolCallId"])
        .collect();
    assert_eq!(asked, [&json!("set://a.txt"), &json!("set://a.txt#2")]);
    let cards: Vec<&Value> = drive
        .updates("tool_call")
        .into_iter()
        .filter(|call| call["kind"] == "edit")
        .map(|call| &call["toolCallId"])
        .collect();
    assert!(
        cards.contains(&&json!("set://a.txt")) && cards.contains(&&json!("set://a.txt#2")),
        "each edit is a tool call of its own: {cards:?}"
    );
    let ended: Vec<(&Value, &Value)> = drive
        .updates("tool_call_update")
        .into_iter()
        .filter(|update| update["status"] == "completed")
        .map(|update| (&update["toolCallId"], &update["status"]))
        .collect();
    assert!(
        ended.contains(&(&json!("set://a.txt"), &json!("completed")))
            && ended.contains(&(&json!("set://a.txt#2"), &json!("completed"))),
        "{ended:?}"
    );
    assert_eq!(drive.file("a.txt").as_deref(), Some("ONE\nTWO\n"));
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
}

async fn a_rejected_edit_changes_nothing(sdk: Sdk) {
    let llm = FakeLlm::start([Step::reply(EDIT)]);
    let drive = Drive::run(sdk, "edit-reject", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(drive.seen["writes"], json!([]));
    assert_eq!(drive.file("a.txt").as_deref(), Some("one\ntwo\n"));
    let refused = drive
        .updates("tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "set://a.txt")
        .expect("the rejected edit's end is shown");
    assert_eq!(refused["status"], json!("failed"));
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(llm.requests().len(), 1, "a rejection stops the run");
}

async fn a_cancel_during_a_slow_model_call_ends_the_turn_cancelled(sdk: Sdk) {
    let llm = FakeLlm::start([Step::Hang]);
    let drive = Drive::run(sdk, "cancel", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["cancelled"]));
    assert_eq!(llm.requests().len(), 1);
}

async fn a_cancel_without_a_prompt_in_flight_leaves_the_run_alone(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<summarize>First.</summarize>"),
        Step::reply("<summarize>Second.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "idle-cancel", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn", "end_turn"]));
    assert_eq!(drive.messages(), ["First.", "Second."]);
    assert_eq!(llm.requests().len(), 2);
    let session = drive.seen["session"]["sessionId"].as_str().unwrap();
    let server = ServerProcess::start_with(drive.home.path(), &llm, &[]).await;
    let mut client = server.client().await;
    client.init("demo", &drive.project).await;
    let run = client.ok("getRun", json!({"run": session})).await;
    assert_eq!(run["status"], json!(200), "{run}");
    assert_eq!(run["actions"], json!([]), "no abort recorded: {run}");
}

/// The run of `drive`'s session as a server on its home stores it, and its entries under
/// `pattern` (`(path, status)`).
async fn stored_run(drive: &Drive, llm: &FakeLlm, pattern: &str) -> (Value, Vec<(String, i64)>) {
    let session = drive.seen["session"]["sessionId"].as_str().unwrap();
    let server = ServerProcess::start_with(drive.home.path(), llm, &[]).await;
    let mut client = server.client().await;
    client.init("demo", &drive.project).await;
    let run = client.ok("getRun", json!({"run": session})).await;
    let entries = client.statuses(session, pattern).await;
    (run, entries)
}

/// The turn ended without an error the editor saw, `cancelled`.
fn assert_cancelled_cleanly(drive: &Drive) {
    drive.assert_clean_session();
    let errors = drive.seen["errors"].as_array().unwrap();
    assert!(
        errors.iter().all(|error| error["what"] != "prompt"),
        "the prompt ended without an error: {errors:?}"
    );
    assert_eq!(drive.seen["stopReasons"], json!(["cancelled"]));
}

async fn a_cancel_while_a_proposal_is_asked_about_ends_the_turn_cancelled_and_withdraws_it(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::reply("<sh>touch never.txt</sh><update>Touching it.</update>"),
        Step::reply("<summarize>Touched.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "cancel-asking", &llm).await;
    assert_cancelled_cleanly(&drive);
    assert_eq!(drive.seen["permissions"].as_array().unwrap().len(), 1);
    let path = drive.seen["permissions"][0]["toolCall"]["toolCallId"]
        .as_str()
        .unwrap()
        .to_string();
    let ended = drive
        .updates("tool_call_update")
        .into_iter()
        .rfind(|update| update["toolCallId"] == json!(path))
        .expect("the withdrawn proposal's tool call is updated");
    assert_eq!(ended["status"], json!("failed"));
    assert!(drive.file("never.txt").is_none(), "nothing ran");
    assert_eq!(llm.requests().len(), 1, "the run did not resume");
    let (run, proposals) = stored_run(&drive, &llm, "sh://**").await;
    assert_eq!(run["status"], json!(499), "{run}");
    assert_eq!(proposals, vec![(path, 499)], "the proposal was withdrawn");
}

async fn a_cancel_while_the_editors_terminal_runs_a_command_kills_it_and_ends_the_turn_cancelled(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::reply("<sh>sleep 60; touch slept.txt</sh><update>Sleeping.</update>"),
        Step::reply("<summarize>Slept.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "command-cancel", &llm).await;
    assert_cancelled_cleanly(&drive);
    let terminals = drive.seen["terminals"].as_array().unwrap();
    assert!(
        terminals.contains(&json!({"killed": "term-1"})),
        "the terminal was killed: {terminals:?}"
    );
    assert!(
        terminals.contains(&json!({"released": "term-1"})),
        "and released: {terminals:?}"
    );
    assert!(
        drive.file("slept.txt").is_none(),
        "the command did not finish"
    );
    assert_eq!(llm.requests().len(), 1, "the run did not resume");
    let (run, _) = stored_run(&drive, &llm, "sh://**").await;
    assert_eq!(run["status"], json!(499), "{run}");
}

async fn malformed_frames_get_errors_and_the_agent_keeps_serving(sdk: Sdk) {
    let llm = FakeLlm::start([Step::reply("<summarize>Fine.</summarize>")]);
    let drive = Drive::run(sdk, "malformed", &llm).await;
    let codes: Vec<&Value> = drive.seen["rawErrors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| &error["code"])
        .collect();
    assert_eq!(codes, [&json!(-32700), &json!(-32700)]);
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Fine."]);
}

async fn ask_mode_asks_and_an_unknown_mode_is_refused(sdk: Sdk) {
    let llm = FakeLlm::start([Step::reply("<summarize>It counts.</summarize>")]);
    let drive = Drive::run(sdk, "ask-mode", &llm).await;
    drive.assert_clean_session();
    let refused = drive.seen["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|error| error["what"] == "set_mode plan")
        .expect("an unknown mode is refused");
    assert_eq!(refused["code"], json!(-32602));
    assert_eq!(
        refused["data"],
        json!("no mode plan: the modes are ask and act")
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let system = crate::support::system_message(&llm.requests()[0]);
    assert!(
        !system.contains("<sh>command</sh>"),
        "ask mode offers no sh: {system}"
    );
}

async fn an_allowed_command_runs_in_the_editors_terminal_and_its_output_reaches_the_model(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo hello from the terminal</sh><update>Running it.</update>"),
        Step::reply("<summarize>It said hello.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "command", &llm).await;
    drive.assert_clean_session();
    let permissions = drive.seen["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1);
    let shown = drive
        .updates("tool_call")
        .into_iter()
        .find(|call| call["kind"] == "execute")
        .expect("the command is shown");
    assert_eq!(shown["title"], json!("sh echo hello from the terminal"));
    assert_eq!(
        drive.seen["terminals"],
        json!([
            {"created": {"sessionId": drive.seen["session"]["sessionId"], "command": "sh",
                         "args": ["-c", "echo hello from the terminal"],
                         "cwd": drive.project, "outputByteLimit": 1048576}},
            {"waited": "term-1"},
            {"output": "term-1"},
            {"released": "term-1"},
        ])
    );
    let in_terminal = drive
        .updates("tool_call_update")
        .into_iter()
        .find(|update| update["content"][0]["type"] == "terminal")
        .expect("the terminal is shown in the tool call");
    assert_eq!(in_terminal["content"][0]["terminalId"], json!("term-1"));
    let resumed = crate::support::user_message(&llm.requests()[1]);
    assert!(
        resumed.contains("hello from the terminal"),
        "the output reaches the model: {resumed}"
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Running it.", "It said hello."]);
}

async fn a_command_allowed_always_is_not_asked_about_again_in_the_session(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo hello from the terminal</sh><update>Running it.</update>"),
        Step::reply("<summarize>It said hello.</summarize>"),
        Step::reply("<sh>echo hello again</sh><update>Again.</update>"),
        Step::reply("<summarize>It said it again.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "command-always", &llm).await;
    drive.assert_clean_session();
    let permissions = drive.seen["permissions"].as_array().unwrap();
    assert_eq!(
        permissions.len(),
        1,
        "the second command is not asked about"
    );
    let always = permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["kind"] == "allow_always")
        .expect("a command offers to allow it always");
    assert_eq!(always["name"], json!("Always allow `echo hello *`"));
    let ran: Vec<&Value> = drive.seen["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|step| step["created"]["args"].get(1))
        .collect();
    assert_eq!(
        ran,
        [
            &json!("echo hello from the terminal"),
            &json!("echo hello again")
        ]
    );
    let resumed = crate::support::user_message(&llm.requests()[3]);
    assert!(
        resumed.contains("hello again"),
        "its output reaches the model: {resumed}"
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn", "end_turn"]));
}

async fn an_allowed_command_of_a_project_that_runs_commands_on_the_server_runs_there(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo ran on the server > proof.txt; cat proof.txt</sh><update>Running it.</update>"),
        Step::reply("<summarize>It ran.</summarize>"),
    ]);
    let drive = Drive::run_with(sdk, "command", &llm, &[("RUMMY_RUN_COMMANDS", "server")]).await;
    drive.assert_clean_session();
    assert_eq!(
        drive.seen["permissions"].as_array().unwrap().len(),
        1,
        "still asked"
    );
    assert!(
        drive.seen["terminals"].as_array().is_none_or(Vec::is_empty),
        "no terminal is made: {}",
        drive.seen["terminals"]
    );
    let resumed = crate::support::user_message(&llm.requests()[1]);
    assert!(resumed.contains("ran on the server"), "{resumed}");
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
}

async fn a_finished_run_is_loaded_in_a_new_agent_replayed_and_continued(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"a.txt\"/><update>Reading a.txt.</update>"),
        Step::reply("<summarize>a.txt counts to two.</summarize>"),
        Step::reply("<summarize>The second part is done.</summarize>"),
    ]);
    let first = Drive::run(sdk, "stream", &llm).await;
    let session = first.seen["session"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let drive = first
        .again(sdk, "load", &llm, &[("ACP_LOAD", &session)])
        .await;
    drive.assert_clean_session();
    assert_eq!(
        drive.seen["initialize"]["agentCapabilities"]["loadSession"],
        json!(true)
    );
    let replayed = drive.seen["replayed"].as_u64().unwrap() as usize;
    let replay: Vec<&Value> = drive.seen["updates"].as_array().unwrap()[..replayed]
        .iter()
        .filter(|update| update["sessionUpdate"] != "available_commands_update")
        .collect();
    let kinds: Vec<&Value> = replay
        .iter()
        .map(|update| &update["sessionUpdate"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("user_message_chunk"),
            &json!("tool_call"),
            &json!("agent_message_chunk"),
            &json!("agent_message_chunk"),
        ],
        "{replay:?}"
    );
    assert_eq!(replay[0]["content"]["text"], json!("please do the task"));
    let offered = drive.updates("available_commands_update");
    assert_eq!(
        offered.len(),
        1,
        "the loaded session's commands are offered"
    );
    assert_eq!(offered[0]["availableCommands"], json!([]));
    assert_eq!(replay[1]["kind"], json!("read"));
    assert_eq!(replay[1]["status"], json!("completed"));
    assert_eq!(replay[1]["title"], json!("get a.txt"));
    assert_eq!(
        replay[1]["locations"],
        json!([{"path": drive.project.join("a.txt")}])
    );
    assert_eq!(replay[2]["content"]["text"], json!("Reading a.txt."));
    assert_eq!(replay[3]["content"]["text"], json!("a.txt counts to two."));
    let listed = drive.seen["listed"]["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["sessionId"], json!(session));
    assert_eq!(listed[0]["cwd"], json!(drive.project));
    assert_eq!(listed[0]["title"], json!("a.txt counts to two."));
    let unknown = drive.seen["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|error| error["what"] == "load unknown")
        .expect("loading a session that does not exist fails");
    assert_eq!(unknown["code"], json!(-32002));
    assert_eq!(
        unknown["data"],
        json!(format!(
            "no session no_such_run to load: the project at {} has no run of that name",
            drive.project.display()
        ))
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages()[2..], ["The second part is done."]);
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    let prompt = crate::support::user_message(&requests[2]);
    assert!(prompt.contains("and now the second part"), "{prompt}");
    let packet = requests[2]["messages"].to_string();
    assert!(
        packet.contains("please do the task") && packet.contains("a.txt counts to two."),
        "the model sees the run's earlier history: {packet}"
    );
}

async fn skills_and_personas_are_slash_commands_that_reach_the_model(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<summarize>SELECT 1;</summarize>"),
        Step::reply("<summarize>Ahoy.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    for (kind, name, body) in [
        (
            "skills",
            "sql_style",
            "---\nname: SQL style\ndescription: How this team writes SQL.\n---\nLowercase keywords.\n",
        ),
        ("personas", "pirate", "You talk like a pirate.\n"),
    ] {
        std::fs::create_dir_all(home.path().join(kind)).unwrap();
        std::fs::write(home.path().join(kind).join(format!("{name}.md")), body).unwrap();
    }
    let drive = Drive::run_in(sdk, "slash", &llm, home, "demo", None, &[]).await;
    drive.assert_clean_session();
    let offered = drive.updates("available_commands_update");
    assert_eq!(offered.len(), 1, "sent once, after session/new");
    let names: Vec<&Value> = offered[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| &command["name"])
        .collect();
    assert_eq!(names, [&json!("sql_style"), &json!("persona:pirate")]);
    assert_eq!(
        offered[0]["availableCommands"][0]["description"],
        json!("Skill: How this team writes SQL.")
    );
    assert_eq!(
        drive.seen["stopReasons"],
        json!(["end_turn", "end_turn", "end_turn"])
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "a command alone calls no model");
    let prompt = crate::support::user_message(&requests[0]);
    assert!(
        prompt.contains(">write the query</prompt>"),
        "the text after the command is the prompt: {prompt}"
    );
    let packet = requests[0]["messages"].to_string();
    assert!(
        packet.contains("skill://sql_style") && packet.contains("How this team writes SQL."),
        "the skill is in the run: {packet}"
    );
    assert!(!packet.contains("like a pirate"));
    let system = crate::support::system_message(&requests[1]);
    assert!(
        system.contains("You talk like a pirate."),
        "the persona is the run's: {system}"
    );
}

async fn a_model_chosen_in_the_session_runs_its_next_prompt(sdk: Sdk) {
    let llm = FakeLlm::start([Step::reply("<summarize>The second.</summarize>")]);
    let second = [
        ("RUMMY_MODEL_second", "openai/second-model"),
        ("RUMMY_CONTEXT_second", "32768"),
    ];
    let drive = Drive::run_with(sdk, "model", &llm, &second).await;
    drive.assert_clean_session();
    let offered = &drive.seen["session"]["configOptions"];
    assert_eq!(offered[0]["id"], json!("mode"));
    assert_eq!(offered[0]["currentValue"], json!("act"));
    assert_eq!(offered[1]["id"], json!("model"));
    assert_eq!(offered[1]["category"], json!("model"));
    assert_eq!(
        offered[1]["currentValue"],
        json!("fake"),
        "the catalogue's first"
    );
    let values: Vec<&Value> = offered[1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| &option["value"])
        .collect();
    assert_eq!(values, [&json!("fake"), &json!("second")]);
    assert_eq!(
        drive.seen["configured"]["configOptions"][1]["currentValue"],
        json!("second")
    );
    let refused = drive.seen["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|error| error["what"] == "set model nope")
        .expect("a model outside the catalogue is refused");
    assert_eq!(refused["code"], json!(-32602));
    assert_eq!(
        refused["data"],
        json!("no model nope: the models are fake, second")
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], json!("second-model"));
}

async fn a_question_is_answered_in_free_text_through_the_editors_form(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<ask_user question=\"Which colour?\" options=\"red; blue\"/>"),
        Step::reply("<summarize>Teal it is.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "question-form", &llm).await;
    drive.assert_clean_session();
    assert_eq!(
        drive.seen["permissions"],
        json!([]),
        "asked in a form instead"
    );
    let forms = drive.seen["elicitations"].as_array().unwrap();
    assert_eq!(forms.len(), 1);
    let form = &forms[0];
    assert_eq!(form["mode"], json!("form"));
    assert_eq!(form["message"], json!("Which colour?"));
    assert_eq!(form["sessionId"], drive.seen["session"]["sessionId"]);
    assert_eq!(
        form["toolCallId"],
        json!("ask_user://turn_1/Which%20colour%3F")
    );
    assert_eq!(
        form["requestedSchema"],
        json!({"type": "object", "required": ["answer"], "properties": {"answer": {
            "type": "string", "title": "Answer", "description": "Suggested: red; blue"}}})
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let resumed = requests[1]["messages"].to_string();
    assert!(
        resumed.contains("teal, actually"),
        "the answer reaches the model: {resumed}"
    );
}

async fn without_forms_an_open_question_is_answered_in_the_next_prompt(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<ask_user question=\"What is the release called?\"/>"),
        Step::reply("<summarize>Nimbus.</summarize>"),
    ]);
    let drive = Drive::run(sdk, "question-chat", &llm).await;
    drive.assert_clean_session();
    let asked = &drive.seen["permissions"][0];
    let options: Vec<(&Value, &Value)> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| (&option["optionId"], &option["name"]))
        .collect();
    assert_eq!(
        options,
        [
            (&json!("in-chat"), &json!("Answer in my next message")),
            (&json!("reject"), &json!("Reject")),
        ]
    );
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn", "end_turn"]));
    let requests = llm.requests();
    assert_eq!(
        requests.len(),
        2,
        "the question ends the turn without asking again"
    );
    let next = requests[1]["messages"].to_string();
    assert!(
        next.contains("It is called Nimbus") && next.contains("What is the release called?"),
        "the model sees its question and the answer that followed: {next}"
    );
}

async fn resources_of_the_project_become_entries_the_model_sees_and_others_stay_text(sdk: Sdk) {
    let llm = FakeLlm::start([Step::reply("<summarize>Compared.</summarize>")]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("demo")).unwrap();
    std::fs::write(home.path().join("demo/b.txt"), "on disk\n").unwrap();
    std::fs::write(home.path().join("secret.txt"), "outside the project\n").unwrap();
    let drive = Drive::run_in(sdk, "resources", &llm, home, "demo", None, &[]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let request: String = llm.requests()[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap_or_default())
        .collect();
    let prompt = crate::support::user_message(&llm.requests()[0]);
    let secret = format!(
        "@file://{}",
        drive.project.parent().unwrap().join("secret.txt").display()
    );
    assert!(
        prompt.contains(&format!(
            "compare these\n\n@a.txt\n\n@known://editor/b.txt\n\n{secret}"
        )),
        "the prompt names each resource: {prompt}"
    );
    assert!(
        !request.contains("outside the project"),
        "a file outside the project is never read: {request}"
    );
    let buffer = drive
        .updates("tool_call")
        .into_iter()
        .find(|call| call["toolCallId"] == "known://editor/b.txt")
        .unwrap_or_else(|| panic!("the buffer is shown: {:?}", drive.seen["updates"]));
    assert_eq!(buffer["kind"], json!("read"), "{buffer}");
    assert_eq!(buffer["title"], json!("editor buffer b.txt"));
    assert_eq!(
        buffer["locations"],
        json!([{"path": drive.project.join("b.txt")}])
    );
    assert!(
        request.contains("unsaved"),
        "the model sees the editor's buffer: {request}"
    );
    assert!(
        !request.contains("on disk"),
        "not the file on disk: {request}"
    );
    let read = drive
        .updates("tool_call")
        .into_iter()
        .find(|call| call["kind"] == "read" && call["toolCallId"] != "known://editor/b.txt")
        .expect("the linked file is read into the run");
    assert_eq!(
        read["locations"],
        json!([{"path": drive.project.join("a.txt")}])
    );
    assert!(
        request.contains("one\ntwo"),
        "the model sees the linked file: {request}"
    );
}

/// A team server with a users file: `mo` is a member of project `demo` only.
async fn team_server(home: &Path, llm: &FakeLlm) -> ServerProcess {
    let users = home.join("users.toml");
    std::fs::write(
        &users,
        format!(
            "[[person]]\nname = \"mo\"\ntoken_sha256 = \"{}\"\nrole = \"member\"\nprojects = [\"demo\"]\n",
            hash_token("mo-token")
        ),
    )
    .unwrap();
    let users = users.display().to_string();
    ServerProcess::start_with(
        home,
        llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", users.as_str()),
        ],
    )
    .await
}

async fn remote_a_person_works_in_their_project_through_a_team_server(sdk: Sdk) {
    let llm = reading_a_txt();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let drive = Drive::run_in(sdk, "stream", &llm, home, "demo", Some(remote), &[]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
    assert_eq!(llm.requests().len(), 2);
}

async fn remote_a_proposal_another_client_accepts_is_withdrawn_from_the_editor_and_never_written(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::reply(EDIT),
        Step::reply("<summarize>Edited elsewhere.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let marks = tempfile::tempdir().unwrap();
    let asking = marks.path().join("asking");
    let marker = marks.path().display().to_string();
    let root = home.path().join("demo");
    let env = [("ACP_MARKER", marker.as_str())];
    let driving = {
        let mut all = llm_env(&llm);
        all.extend_from_slice(&env);
        let all: Vec<(String, String)> = all
            .into_iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        actix_web::rt::spawn(async move {
            let all: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Drive::spawn(sdk, "withdrawn", home, "demo", Some(remote), &all).await
        })
    };
    crate::support::eventually("the editor to be asked", async || {
        asking.exists().then_some(())
    })
    .await;
    let mut other = crate::support::Client::connect(&format!(
        "ws://127.0.0.1:{}/?token=shared-token",
        server.port
    ))
    .await;
    other.init("demo", &root).await;
    let run = other.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let present = other.ok("getRun", json!({"run": run})).await["present"].clone();
    assert_eq!(
        present[0]["client"],
        json!({"name": "rummy acp", "kind": "editor"}),
        "the editor is in the run it prompted, as rummy acp: {present}"
    );
    assert_eq!(present[0]["person"], json!("mo"));
    assert_eq!(present[0]["driving"], json!(true));
    std::fs::write(root.join("a.txt"), "one\nTWO\n").unwrap();
    let accepted = other
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": "set://a.txt", "action": "accept"}}),
        )
        .await;
    assert_eq!(accepted["status"], json!(200), "{accepted}");
    std::fs::write(marks.path().join("settled"), "").unwrap();
    let drive = driving.await.unwrap();
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.seen["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(
        drive.seen["writes"],
        json!([]),
        "the stale answer wrote nothing"
    );
    let settled = drive
        .updates("tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "set://a.txt")
        .expect("the withdrawn request's tool call is updated");
    assert_eq!(settled["status"], json!("completed"));
    assert_eq!(
        settled["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "Accepted by the operator."}}])
    );
    assert_eq!(drive.messages(), ["Editing a.txt.", "Edited elsewhere."]);
    assert_eq!(llm.requests().len(), 2, "the run resumed once");
}

/// A revert another client raises while the editor's session is idle: shown at once as a
/// pending tool call (no permission request outside a prompt turn), asked about at the start
/// of the editor's next prompt, written back through the editor once allowed, and resolved
/// without another model call.
async fn remote_a_revert_raised_on_the_idle_run_is_shown_at_once_and_asked_at_the_next_prompt(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::reply(EDIT),
        Step::reply("<summarize>Edited a.txt.</summarize>"),
        Step::reply("<summarize>Nothing else.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let marks = tempfile::tempdir().unwrap();
    let done = marks.path().join("ri-done");
    let marker = marks.path().display().to_string();
    let root = home.path().join("demo");
    let driving = {
        let mut all = llm_env(&llm);
        all.push(("ACP_MARKER", marker.as_str()));
        let all: Vec<(String, String)> = all
            .into_iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        actix_web::rt::spawn(async move {
            let all: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Drive::spawn(sdk, "revert-idle", home, "demo", Some(remote), &all).await
        })
    };
    crate::support::eventually("the editor's first prompt to end", async || {
        done.exists().then_some(())
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nTWO\n"
    );
    let mut other = crate::support::Client::connect(&format!(
        "ws://127.0.0.1:{}/?token=shared-token",
        server.port
    ))
    .await;
    other.init("demo", &root).await;
    let run = other.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let raised = other
        .ok("run/revert", json!({"run": run, "path": "a.txt"}))
        .await;
    let path = raised["path"].as_str().unwrap().to_string();

    let drive = driving.await.unwrap();
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn", "end_turn"]));
    assert_eq!(
        drive.seen["beforePrompt"],
        json!({"permissions": 1, "shown": true}),
        "shown while idle, not asked: {:?}",
        drive.seen["permissions"]
    );
    let shown: Vec<&Value> = drive
        .updates("tool_call")
        .into_iter()
        .filter(|call| call["toolCallId"] == json!(path))
        .collect();
    assert_eq!(shown.len(), 1, "shown once: {shown:?}");
    assert!(
        [Value::Null, json!("pending")].contains(&shown[0]["status"]),
        "pending (the default, left out): {}",
        shown[0]
    );
    let permissions = drive.seen["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 2);
    assert_eq!(permissions[1]["toolCall"]["toolCallId"], json!(path));
    assert_eq!(drive.file("a.txt").as_deref(), Some("one\ntwo\n"));
    assert_eq!(drive.seen["writes"].as_array().unwrap().len(), 2);
    let settled = drive
        .updates("tool_call_update")
        .into_iter()
        .filter(|update| update["toolCallId"] == json!(path))
        .map(|update| update["status"].clone())
        .collect::<Vec<_>>();
    assert!(settled.contains(&json!("completed")), "{settled:?}");
    let entry = other
        .ok("getEntries", json!({"run": run, "pattern": path}))
        .await;
    assert_eq!(entry[0]["status"], json!(200), "resolved: {entry}");
    assert_eq!(
        llm.requests().len(),
        3,
        "the revert's resolution made no model call"
    );
}

/// Two clients on one run: the editor's prompt runs, a colleague's is queued behind it; the
/// editor's cancel stops its own prompt only (`run/cancel`), and the colleague's runs to its
/// end.
async fn remote_an_editors_cancel_stops_its_prompt_and_a_colleagues_queued_prompt_runs_to_its_end(
    sdk: Sdk,
) {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::reply("<summarize>Answered the colleague.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().display().to_string();
    let root = home.path().join("demo");
    let driving = {
        let mut all = llm_env(&llm);
        all.push(("ACP_MARKER", marker.as_str()));
        let all: Vec<(String, String)> = all
            .into_iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        actix_web::rt::spawn(async move {
            let all: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Drive::spawn(sdk, "cancel-mine", home, "demo", Some(remote), &all).await
        })
    };
    llm.wait_for_requests(1).await;
    let mut colleague = crate::support::Client::connect(&format!(
        "ws://127.0.0.1:{}/?token=shared-token",
        server.port
    ))
    .await;
    colleague.init("demo", &root).await;
    let run = colleague.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let question = "the colleague's question";
    let asking = colleague
        .send(
            "ask",
            json!({"model": "fake", "prompt": question, "run": run}),
        )
        .await;
    colleague
        .until_notified("run/action", |params| {
            params["action"] == json!("prompt") && params["message"] == json!(question)
        })
        .await;
    std::fs::write(marks.path().join("cancel"), "").unwrap();
    let drive = driving.await.unwrap();
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["cancelled"]));
    let answered = colleague.reply(&asking).await;
    assert_eq!(
        answered["result"]["status"],
        json!(200),
        "the colleague's prompt ran to its end: {answered}"
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(crate::support::user_message(&requests[1]).contains(question));
}

async fn remote_a_project_outside_the_persons_is_refused_with_rummys_error(sdk: Sdk) {
    let llm = FakeLlm::start([]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let drive = Drive::run_in(sdk, "stream", &llm, home, "other", Some(remote), &[]).await;
    let errors = drive.seen["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["what"], json!("session/new"));
    assert_eq!(errors[0]["code"], json!(-32005));
    assert!(
        errors[0]["message"].as_str().unwrap().contains("other"),
        "{errors:?}"
    );
    assert_eq!(drive.seen["exit"], json!({"code": 0, "signal": null}));
    assert!(llm.requests().is_empty());
}

async fn remote_without_a_token_the_editor_signs_in_with_the_token_file(sdk: Sdk) {
    let llm = reading_a_txt();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let token_file = home.path().join("mo.token");
    let remote = Remote {
        url: format!("ws://127.0.0.1:{}/", server.port),
        env: vec![
            ("ACP_TOKEN_FILE", token_file.display().to_string()),
            ("ACP_SIGN_IN_TOKEN", "mo-token".to_string()),
        ],
    };
    let drive = Drive::run_in(sdk, "sign-in", &llm, home, "demo", Some(remote), &[]).await;
    assert_eq!(
        drive.seen["initialize"]["authMethods"],
        json!([{"id": "token-file", "name": "rummy token",
                "description": format!("Put your rummy token (from the server's admin) on the \
                                        first line of {}, then sign in", token_file.display())}])
    );
    let errors = drive.seen["errors"].as_array().unwrap();
    let unsigned = errors
        .iter()
        .find(|error| error["what"] == "session/new unsigned")
        .expect("a session before signing in is refused");
    assert_eq!(unsigned["code"], json!(-32000), "auth_required");
    assert!(
        unsigned["data"]
            .as_str()
            .unwrap()
            .contains(&format!("first line of {}", token_file.display())),
        "{unsigned}"
    );
    let other = errors
        .iter()
        .find(|error| error["what"] == "authenticate other")
        .expect("a method not offered is refused");
    assert_eq!(other["code"], json!(-32602));
    assert_eq!(drive.seen["authenticate"], json!({}));
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
}

async fn remote_over_wss_through_a_tls_front(sdk: Sdk) {
    let llm = reading_a_txt();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let front = tls::Front::start(home.path(), server.port).await;
    let remote = Remote {
        url: format!("wss://127.0.0.1:{}/", front.port),
        env: vec![
            ("RUMMY_AUTH_TOKEN", "mo-token".to_string()),
            ("SSL_CERT_FILE", front.certificate.display().to_string()),
        ],
    };
    let drive = Drive::run_in(sdk, "stream", &llm, home, "demo", Some(remote), &[]).await;
    assert!(
        front.served() > 0,
        "the session went through the TLS front: {}",
        drive.seen
    );
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
}

async fn remote_a_refused_token_says_what_to_do_and_the_editor_signs_in_anew(sdk: Sdk) {
    let llm = reading_a_txt();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let token_file = home.path().join("mo.token");
    std::fs::write(&token_file, "revoked-token\n").unwrap();
    let remote = Remote {
        url: format!("ws://127.0.0.1:{}/?token=query-token", server.port),
        env: vec![
            ("ACP_TOKEN_FILE", token_file.display().to_string()),
            ("ACP_SIGN_IN_TOKEN", "mo-token".to_string()),
        ],
    };
    let drive = Drive::run_in(sdk, "sign-in", &llm, home, "demo", Some(remote), &[]).await;
    assert_eq!(
        drive.seen["initialize"]["authMethods"][0]["id"],
        json!("token-file"),
        "signing in is offered though a token was given"
    );
    let errors = drive.seen["errors"].as_array().unwrap();
    let refused = errors
        .iter()
        .find(|error| error["what"] == "session/new unsigned")
        .expect("a session with a token the server refuses is refused");
    assert_eq!(refused["code"], json!(-32000), "auth_required");
    assert_eq!(
        refused["data"],
        json!(format!(
            "the rummy server at ws://127.0.0.1:{}/ refused the token this agent gave it: put \
             a valid one (from the server's admin, or a personal access token minted in the \
             console: a revoked or expired one is refused) on the first line of {} and sign in \
             again (the editor's token-file method), or start the agent with RUMMY_AUTH_TOKEN \
             set to it (and no --token-file)",
            server.port,
            token_file.display()
        ))
    );
    let shown = drive.seen.to_string();
    for secret in ["revoked-token", "query-token"] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
}

/// A TLS front for a rummy server: a certificate for 127.0.0.1 signed by a CA of its own
/// (made with the `openssl` command), each connection's TLS ended here and its bytes passed
/// on.
mod tls {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use tokio::net::{TcpListener, TcpStream};
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::TlsAcceptor;

    pub(super) struct Front {
        pub port: u16,
        /// The CA's certificate, for `SSL_CERT_FILE`.
        pub certificate: PathBuf,
        served: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Front {
        /// In front of the server on `upstream`, its certificate and key written in `dir`.
        pub(super) async fn start(dir: &Path, upstream: u16) -> Front {
            let certificate = dir.join("ca.crt");
            let leaf = dir.join("front.crt");
            let key = dir.join("front.key");
            let extensions = dir.join("front.ext");
            std::fs::write(
                &extensions,
                "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
            )
            .unwrap();
            let ec = [
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ];
            openssl(
                dir,
                &["req", "-x509", "-days", "1", "-subj", "/CN=rummy test CA"],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.crt"],
            );
            openssl(
                dir,
                &["req", "-subj", "/CN=127.0.0.1"],
                &ec,
                &["-keyout", "front.key", "-out", "front.csr"],
            );
            openssl(
                dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    "front.csr",
                    "-CA",
                    "ca.crt",
                    "-CAkey",
                    "ca.key",
                ],
                &["-CAcreateserial", "-days", "1", "-extfile", "front.ext"],
                &["-out", "front.crt"],
            );
            let chain = CertificateDer::pem_file_iter(&leaf)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_file(&key).unwrap();
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            let config = ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap();
            let acceptor = TlsAcceptor::from(Arc::new(config));
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let served = Arc::new(AtomicUsize::new(0));
            let counted = Arc::clone(&served);
            let task = tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let acceptor = acceptor.clone();
                    let counted = Arc::clone(&counted);
                    tokio::spawn(async move {
                        let Ok(mut tls) = acceptor.accept(socket).await else {
                            return;
                        };
                        counted.fetch_add(1, Ordering::SeqCst);
                        let Ok(mut plain) = TcpStream::connect(("127.0.0.1", upstream)).await
                        else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    });
                }
            });
            Front {
                port,
                certificate,
                served,
                task,
            }
        }

        /// How many TLS connections it passed on.
        pub(super) fn served(&self) -> usize {
            self.served.load(Ordering::SeqCst)
        }
    }

    /// Runs `openssl` with these arguments in `dir`.
    fn openssl(dir: &Path, first: &[&str], then: &[&str], last: &[&str]) {
        let made = std::process::Command::new("openssl")
            .current_dir(dir)
            .args(first)
            .args(then)
            .args(last)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("the wss test needs the openssl command");
        assert!(made.success(), "openssl {first:?} failed");
    }

    impl Drop for Front {
        fn drop(&mut self) {
            self.task.abort();
        }
    }
}

/// The editor's MCP servers (`ACP_MCP_SERVERS` for the drivers): the test MCP server on
/// stdio as `glossary`, logging to `log`.
fn editor_mcp_servers(log: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_server.py");
    json!([{
        "name": "glossary",
        "command": "python3",
        "args": ["-u", script.display().to_string()],
        "env": [{"name": "MCP_LOG", "value": log.display().to_string()}],
    }])
    .to_string()
}

/// The model looks a word up with the editor's MCP server, then answers.
fn looking_up() -> FakeLlm {
    FakeLlm::start([
        Step::reply(
            "<mcp server=\"glossary\" tool=\"lookup\">{\"query\": \"rummy\"}</mcp>\
             <update>Looking it up.</update>",
        ),
        Step::reply("<summarize>rummy is a card game.</summarize>"),
    ])
}

async fn an_mcp_server_of_the_editors_session_is_used_by_the_model(sdk: Sdk) {
    let llm = looking_up();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("mcp.log");
    let servers = editor_mcp_servers(&log);
    let drive = Drive::run_with(sdk, "stream", &llm, &[("ACP_MCP_SERVERS", &servers)]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let system = crate::support::system_message(&llm.requests()[0]);
    assert!(
        system.contains("### <mcp server=\"glossary\" tool=\"lookup\">"),
        "{system}"
    );
    let next = format!(
        "{}{}",
        crate::support::system_message(&llm.requests()[1]),
        crate::support::user_message(&llm.requests()[1])
    );
    assert!(next.contains("glossary: rummy means a card game"), "{next}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("call lookup {\"query\": \"rummy\"}"),
        "{logged}"
    );
    let calls = drive.updates("tool_call");
    assert_eq!(calls.len(), 1, "{:?}", drive.seen["updates"]);
    assert_eq!(
        (&calls[0]["toolCallId"], &calls[0]["status"]),
        (&json!("mcp://turn_1/glossary/lookup"), &json!("completed"))
    );
}

async fn remote_the_editors_mcp_servers_are_the_team_servers_choice(sdk: Sdk) {
    let llm = looking_up();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote::with_token(format!("ws://127.0.0.1:{}/", server.port), "mo-token");
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("mcp.log");
    let servers = editor_mcp_servers(&log);
    let env = [("ACP_MCP_SERVERS", servers.as_str())];
    let drive = Drive::run_in(sdk, "stream", &llm, home, "demo", Some(remote), &env).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let system = crate::support::system_message(&llm.requests()[0]);
    assert!(!system.contains("<mcp server="), "{system}");
    assert!(
        !log.exists(),
        "the team server started the editor's command"
    );
}

async fn the_models_open_questions_are_the_sessions_plan(sdk: Sdk) {
    let llm = FakeLlm::start([
        Step::reply("<unknown>which port</unknown><update>Finding the port.</update>"),
        Step::reply(
            "<rm path=\"unknown://which%20port\"/><summarize>It listens on 8080.</summarize>",
        ),
    ]);
    let drive = Drive::run(sdk, "stream", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    let plans: Vec<&Value> = drive.updates("plan");
    let statuses: Vec<Value> = plans
        .iter()
        .map(|plan| {
            plan["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|entry| json!([entry["content"], entry["status"], entry["priority"]]))
                .collect()
        })
        .collect();
    assert_eq!(
        statuses,
        [
            json!([["which port", "pending", "medium"]]),
            json!([["which port", "completed", "medium"]]),
        ],
        "{:?}",
        drive.seen["updates"]
    );
}

/// The model reads a.txt, then says what it holds.
fn reading_a_txt() -> FakeLlm {
    FakeLlm::start([
        Step::reply("<get path=\"a.txt\"/><update>Reading a.txt.</update>"),
        Step::reply("<summarize>a.txt counts to two.</summarize>"),
    ])
}
