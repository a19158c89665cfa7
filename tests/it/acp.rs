//! `rummy acp` (the real binary, local mode: the server in its own process on a fresh home)
//! driven by the official ACP TypeScript SDK (`tests/acp/drive.mjs`, `@agentclientprotocol/sdk`
//! pinned by `tests/acp/package-lock.json`) as an editor would, against the scripted model.
//!
//! They need node and `npm ci` in tests/acp, which `tests/run.sh` does: they are
//! `#[ignore]`d, so that a plain `cargo test` lists them as ignored instead of counting them
//! as passed, and run.sh runs them (`--ignored`). Run without node, they fail and say why.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::llm_env;
use rummy::access::hash_token;
use rummy::llm::fake::{FakeLlm, Step};

const NEEDS_NODE: &str = "needs node and `npm ci` in tests/acp: tests/run.sh does both";

/// What the editor saw of one scenario, with the home and project it ran in.
struct Drive {
    seen: Value,
    project: PathBuf,
    home: tempfile::TempDir,
}

/// A running server `rummy acp --url` connects to, with the person's token.
struct Remote<'a> {
    url: String,
    token: &'a str,
}

impl Drive {
    /// Runs `scenario` of drive.mjs against a local `rummy acp` on a fresh home whose
    /// project `demo` holds `a.txt` ("one\ntwo\n").
    async fn run(scenario: &str, llm: &FakeLlm) -> Drive {
        Drive::run_with(scenario, llm, &[]).await
    }

    /// [`Drive::run`] with these settings in the agent's environment.
    async fn run_with(scenario: &str, llm: &FakeLlm, env: &[(&str, &str)]) -> Drive {
        let home = tempfile::tempdir().unwrap();
        Drive::run_in(scenario, llm, home, "demo", None, env).await
    }

    /// [`Drive::run`] in `home`, the project named `name`, against `remote` when given, with
    /// `env` in the agent's environment.
    async fn run_in(
        scenario: &str,
        llm: &FakeLlm,
        home: tempfile::TempDir,
        name: &str,
        remote: Option<Remote<'_>>,
        env: &[(&str, &str)],
    ) -> Drive {
        let project = home.path().join(name);
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("a.txt"), "one\ntwo\n").unwrap();
        let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp");
        assert!(
            tests.join("node_modules/@agentclientprotocol/sdk").exists(),
            "{NEEDS_NODE}"
        );
        let mut node = tokio::process::Command::new("node");
        node.env_clear();
        if let Some(remote) = remote {
            node.env("ACP_URL", remote.url)
                .env("RUMMY_AUTH_TOKEN", remote.token);
        }
        let output = node
            .current_dir(&tests)
            .arg("drive.mjs")
            .arg(env!("CARGO_BIN_EXE_rummy"))
            .arg(scenario)
            .arg(&project)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home.path())
            .env("RUMMY_LOG", "warn")
            .envs(llm_env(llm))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .await
            .unwrap_or_else(|error| panic!("{NEEDS_NODE}: {error}"));
        assert!(output.status.success(), "drive.mjs {scenario} failed");
        let seen: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)));
        Drive {
            seen,
            project,
            home,
        }
    }

    /// Runs `scenario` in a new agent on the same home and project.
    async fn again(self, scenario: &str, llm: &FakeLlm, env: &[(&str, &str)]) -> Drive {
        let name = self
            .project
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        Drive::run_in(scenario, llm, self.home, &name, None, env).await
    }

    fn updates(&self, kind: &str) -> Vec<&Value> {
        self.seen["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }

    fn messages(&self) -> Vec<&str> {
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
    fn assert_clean_session(&self) {
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_prompt_streams_the_models_text_and_commands_and_ends_the_turn() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"a.txt\"/><update>Reading a.txt.</update>"),
        Step::reply("<summarize>a.txt counts to two.</summarize>"),
    ]);
    let drive = Drive::run("stream", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn the_turn_limit_ends_the_turn_max_turn_requests() {
    let llm = FakeLlm::start([
        Step::reply("<known path=\"known://one\">1</known><update>Step one.</update>"),
        Step::reply("<known path=\"known://two\">2</known><update>Step two.</update>"),
        Step::reply("<summarize>never asked</summarize>"),
    ]);
    let drive = Drive::run_with("stream", &llm, &[("RUMMY_MAX_TURNS", "2")]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["max_turn_requests"]));
    assert_eq!(drive.messages(), ["Step one.", "Step two."]);
    assert_eq!(llm.requests().len(), 2);
}

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_models_refusal_ends_the_turn_refusal_with_its_text() {
    let llm = FakeLlm::start([Step::Json(json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": null,
                                 "refusal": "I cannot help with that."}}],
    }))]);
    let drive = Drive::run("stream", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["refusal"]));
    assert_eq!(drive.messages(), ["I cannot help with that."]);
    assert_eq!(llm.requests().len(), 1);
}

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn an_allowed_edit_is_written_through_the_editor() {
    let llm = FakeLlm::start([
        Step::reply(EDIT),
        Step::reply("<summarize>Edited.</summarize>"),
    ]);
    let drive = Drive::run("edit-allow", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_rejected_edit_changes_nothing() {
    let llm = FakeLlm::start([Step::reply(EDIT)]);
    let drive = Drive::run("edit-reject", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_cancel_during_a_slow_model_call_ends_the_turn_cancelled() {
    let llm = FakeLlm::start([Step::Hang]);
    let drive = Drive::run("cancel", &llm).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["cancelled"]));
    assert_eq!(llm.requests().len(), 1);
}

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn malformed_frames_get_errors_and_the_agent_keeps_serving() {
    let llm = FakeLlm::start([Step::reply("<summarize>Fine.</summarize>")]);
    let drive = Drive::run("malformed", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn ask_mode_asks_and_an_unknown_mode_is_refused() {
    let llm = FakeLlm::start([Step::reply("<summarize>It counts.</summarize>")]);
    let drive = Drive::run("ask-mode", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn an_allowed_command_runs_in_the_editors_terminal_and_its_output_reaches_the_model() {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo hello from the terminal</sh><update>Running it.</update>"),
        Step::reply("<summarize>It said hello.</summarize>"),
    ]);
    let drive = Drive::run("command", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_finished_run_is_loaded_in_a_new_agent_replayed_and_continued() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"a.txt\"/><update>Reading a.txt.</update>"),
        Step::reply("<summarize>a.txt counts to two.</summarize>"),
        Step::reply("<summarize>The second part is done.</summarize>"),
    ]);
    let first = Drive::run("stream", &llm).await;
    let session = first.seen["session"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let drive = first.again("load", &llm, &[("ACP_LOAD", &session)]).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn skills_and_personas_are_slash_commands_that_reach_the_model() {
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
    let drive = Drive::run_in("slash", &llm, home, "demo", None, &[]).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_model_chosen_in_the_session_runs_its_next_prompt() {
    let llm = FakeLlm::start([Step::reply("<summarize>The second.</summarize>")]);
    let second = [
        ("RUMMY_MODEL_second", "openai/second-model"),
        ("RUMMY_CONTEXT_second", "32768"),
    ];
    let drive = Drive::run_with("model", &llm, &second).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn a_question_is_answered_in_free_text_through_the_editors_form() {
    let llm = FakeLlm::start([
        Step::reply("<ask_user question=\"Which colour?\" options=\"red; blue\"/>"),
        Step::reply("<summarize>Teal it is.</summarize>"),
    ]);
    let drive = Drive::run("question-form", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn without_forms_an_open_question_is_answered_in_the_next_prompt() {
    let llm = FakeLlm::start([
        Step::reply("<ask_user question=\"What is the release called?\"/>"),
        Step::reply("<summarize>Nimbus.</summarize>"),
    ]);
    let drive = Drive::run("question-chat", &llm).await;
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

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn remote_a_person_works_in_their_project_through_a_team_server() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"a.txt\"/><update>Reading a.txt.</update>"),
        Step::reply("<summarize>a.txt counts to two.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote {
        url: format!("ws://127.0.0.1:{}/", server.port),
        token: "mo-token",
    };
    let drive = Drive::run_in("stream", &llm, home, "demo", Some(remote), &[]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
    assert_eq!(llm.requests().len(), 2);
}

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp: tests/run.sh does both"]
async fn remote_a_project_outside_the_persons_is_refused_with_rummys_error() {
    let llm = FakeLlm::start([]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let remote = Remote {
        url: format!("ws://127.0.0.1:{}/", server.port),
        token: "mo-token",
    };
    let drive = Drive::run_in("stream", &llm, home, "other", Some(remote), &[]).await;
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
