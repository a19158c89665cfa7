//! Memory across runs through the public protocol, with a scripted model: a fact one run
//! remembers is recalled into a later run's packet (`<memory>`, the entry `memory://recall`);
//! a newer fact on a topic replaces the older one, which the history keeps; a project never
//! sees another's memory; a project whose memory is off recalls and writes nothing (and
//! stays off across a restart); the `memory/*` methods refuse bad params and callers
//! without the role; a transient fact (the model's or a client's `remember` marks it) is
//! pruned once the project moved on; a topic's history is folded past its bound; a question
//! in Chinese or Japanese recalls the facts that share its pairs of characters.

use std::path::Path;

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::support::{user_message, Client, TestApp};

/// A loop whose model remembers `topic: fact` and then ends.
fn remembering(topic: &str, fact: &str) -> [Step; 2] {
    [
        Step::reply(format!(
            "<remember topic=\"{topic}\">{fact}</remember><update>kept it</update>"
        )),
        Step::reply("<summarize>Remembered.</summarize>"),
    ]
}

/// The user message of the request whose prompt is `prompt`.
fn user_of(llm: &FakeLlm, prompt: &str) -> String {
    llm.requests()
        .iter()
        .map(user_message)
        .find(|user| user.contains(prompt))
        .unwrap_or_else(|| panic!("no request with the prompt {prompt}"))
}

/// The `<memory>` section of a user message, if it has one.
fn memory_section(user: &str) -> Option<&str> {
    let start = user.find("<memory>")?;
    let end = user[start..].find("</memory>")?;
    Some(&user[start..start + end + "</memory>".len()])
}

async fn ask(client: &mut Client, prompt: &str) -> Value {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    result
}

#[actix_web::test]
async fn a_fact_one_run_remembers_is_recalled_into_a_new_run_of_the_project() {
    let llm = FakeLlm::start(
        remembering("test command", "Run the tests with `make check`.")
            .into_iter()
            .chain([Step::reply("<summarize>Use `make check`.</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("shop").await;
    std::fs::write(root.join("Makefile"), "check:\n\tcargo test\n").unwrap();
    let first = ask(&mut client, "Find out how the tests run.").await;
    let first = first["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(first, "remember://*").await,
        [("remember://turn_1/test%20command".to_string(), 200)]
    );
    assert!(memory_section(&user_of(&llm, "Find out how the tests run.")).is_none());

    let second = ask(&mut client, "How do I run the tests? Answer from memory.").await;
    let second = second["run"].as_str().unwrap();
    assert_ne!(first, second, "a new run");
    let user = user_of(&llm, "How do I run the tests?");
    let memory = memory_section(&user).unwrap_or_else(|| panic!("no <memory> in {user}"));
    assert!(
        memory.contains("- [project] test command: Run the tests with `make check`."),
        "{memory}"
    );
    assert!(
        user.find("<memory>") < user.find("<prompt"),
        "memory comes before the prompt: {user}"
    );
    assert_eq!(
        client.statuses(second, "memory://*").await,
        [("memory://recall".to_string(), 200)]
    );
    assert!(client.statuses(second, "get://*").await.is_empty());
    assert_eq!(
        client.ok("memory/search", json!({"query": "tests"})).await,
        json!([{"layer": "project", "topic": "test command", "body": "Run the tests with `make check`."}])
    );
}

#[actix_web::test]
async fn a_newer_fact_replaces_an_older_one_which_stays_in_the_history() {
    let llm = FakeLlm::start(
        remembering("Test Command", "npm test")
            .into_iter()
            .chain(remembering("test  command", "make check"))
            .chain([Step::reply("<summarize>make check</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    ask(&mut client, "Learn the test command.").await;
    ask(&mut client, "The test command changed.").await;
    let facts = client.ok("memory/list", json!({})).await;
    assert_eq!(facts["enabled"], json!(true));
    let facts = facts["items"].as_array().unwrap();
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(
        (&facts[0]["topic"], &facts[0]["body"]),
        (&json!("test command"), &json!("make check"))
    );
    let history = client.ok("memory/list", json!({"history": true})).await;
    let history = history["items"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["body"], json!("npm test"));
    assert!(history[0]["replacedAt"].is_string());

    ask(&mut client, "Which test command?").await;
    let user = user_of(&llm, "Which test command?");
    let memory = memory_section(&user).unwrap();
    let current = memory.find("- [project] test command: make check").unwrap();
    let older = memory.find("test command: npm test").unwrap();
    assert!(current < older, "the current fact first: {memory}");
    assert!(memory.contains("- [replaced "), "{memory}");
}

#[actix_web::test]
async fn a_project_never_sees_another_projects_memory() {
    let llm = FakeLlm::start(
        remembering("deploy key", "The deploy key lives in vault://shop/deploy.")
            .into_iter()
            .chain([Step::reply("<summarize>No idea.</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut shop, _) = app.client_in_project("shop").await;
    ask(&mut shop, "Where is the deploy key?").await;
    let fact = shop.ok("memory/list", json!({})).await["items"][0]["id"].clone();

    let (mut blog, _) = app.client_in_project("blog").await;
    ask(&mut blog, "Where does the deploy key live?").await;
    assert!(memory_section(&user_of(&llm, "Where does the deploy key live?")).is_none());
    let listing = blog.ok("memory/list", json!({})).await;
    assert_eq!(listing["items"], json!([]));
    assert_eq!(
        blog.ok("memory/search", json!({"query": "deploy key"}))
            .await,
        json!([])
    );
    let (code, message) = blog.err("memory/delete", json!({"id": fact})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32602, format!("no memory item {fact} here").as_str())
    );
    assert_eq!(
        shop.ok("memory/list", json!({})).await["items"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "the other project's fact is untouched"
    );
    shop.ok("memory/delete", json!({"id": fact})).await;
    assert_eq!(shop.ok("memory/list", json!({})).await["items"], json!([]));
}

#[actix_web::test]
async fn memory_off_recalls_and_writes_nothing_and_stays_off_after_a_restart() {
    let llm = FakeLlm::start(
        [Step::reply("<summarize>ok</summarize>")]
            .into_iter()
            .chain(remembering("style", "Tabs, never spaces."))
            .chain([Step::reply("<summarize>ok</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("shop").await;
    client
        .ok(
            "memory/set",
            json!({"topic": "style", "body": "Spaces, four of them."}),
        )
        .await;
    ask(&mut client, "What indentation style?").await;
    assert!(memory_section(&user_of(&llm, "What indentation style?")).is_some());

    assert_eq!(
        client.ok("memory/switch", json!({"enabled": false})).await,
        json!({"enabled": false})
    );
    let run = ask(&mut client, "Remember the style, please.").await;
    let run = run["run"].as_str().unwrap();
    assert!(memory_section(&user_of(&llm, "Remember the style, please.")).is_none());
    assert_eq!(
        client.statuses(run, "remember://*").await,
        [("remember://turn_1/style".to_string(), 403)],
        "nothing written"
    );
    let (code, _) = client
        .err("memory/set", json!({"topic": "style", "body": "Tabs."}))
        .await;
    assert_eq!(code, -32602);

    let app = app.restart().await;
    let mut client = app.client().await;
    client.init("shop", &root).await;
    let listing = client.ok("memory/list", json!({})).await;
    assert_eq!(listing["enabled"], json!(false));
    assert_eq!(
        listing["items"][0]["body"],
        json!("Spaces, four of them."),
        "kept while off"
    );
    ask(&mut client, "Which indentation style again?").await;
    assert!(memory_section(&user_of(&llm, "Which indentation style again?")).is_none());
    assert_eq!(
        client
            .ok("memory/search", json!({"query": "indentation style"}))
            .await,
        json!([])
    );
}

const SHARED: &str = "shared-token";
const VERA: &str = "vera-token";
const MO: &str = "mo-token";
const ADA: &str = "ada-token";

/// vera views `shop`, mo works on it, ada administers everything.
fn team(dir: &Path) -> String {
    let file = dir.join("users.toml");
    let people = [
        ("vera", VERA, "viewer"),
        ("mo", MO, "member"),
        ("ada", ADA, "admin"),
    ];
    let text: String = people
        .iter()
        .map(|(name, token, role)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = [\"*\"]\n",
                hash_token(token)
            )
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

async fn person(app: &TestApp, token: &str, root: &Path) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    client.init("shop", root).await;
    client
}

#[actix_web::test]
async fn the_methods_refuse_bad_params_and_callers_without_the_role() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let env = [
        ("RUMMY_AUTH_TOKEN", SHARED),
        ("RUMMY_USERS_FILE", users.as_str()),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let root = app.project_root("shop");
    let mut ada = person(&app, ADA, &root).await;
    let mut mo = person(&app, MO, &root).await;
    let mut vera = person(&app, VERA, &root).await;

    let catalogue = vera.ok("discover", json!({})).await;
    assert_eq!(
        catalogue["methods"]["memory/server/set"]["role"],
        json!("admin")
    );
    assert_eq!(catalogue["methods"]["memory/list"]["role"], json!("viewer"));

    let (code, message) = mo.err("memory/set", json!({"body": "x"})).await;
    assert_eq!((code, message.as_str()), (-32602, "topic is required"));
    let (code, message) = mo
        .err("memory/set", json!({"topic": " ", "body": "x"}))
        .await;
    assert_eq!((code, message.as_str()), (-32602, "a fact needs a topic"));
    let (code, message) = mo
        .err("memory/set", json!({"topic": "t", "body": ""}))
        .await;
    assert_eq!((code, message.as_str()), (-32602, "a fact needs a body"));
    let huge = "word ".repeat(4_000);
    let (code, message) = mo
        .err("memory/set", json!({"topic": "t", "body": huge}))
        .await;
    assert_eq!(code, -32602);
    assert!(message.starts_with("a fact has at most"), "{message}");
    let (code, _) = mo.err("memory/search", json!({"query": "a b"})).await;
    assert_eq!(code, -32602);
    let (code, _) = mo.err("memory/delete", json!({"id": "one"})).await;
    assert_eq!(code, -32602);

    let (code, _) = vera
        .err(
            "memory/set",
            json!({"topic": "t", "body": "viewers only read"}),
        )
        .await;
    assert_eq!(code, -32005);
    let (code, _) = vera.err("memory/switch", json!({"enabled": false})).await;
    assert_eq!(code, -32005);
    let (code, _) = mo
        .err(
            "memory/server/set",
            json!({"topic": "license", "body": "MIT"}),
        )
        .await;
    assert_eq!(code, -32005);
    let written = ada
        .ok(
            "memory/server/set",
            json!({"topic": "license", "body": "MIT everywhere"}),
        )
        .await;
    assert_eq!(written["written"], json!("created"));
    let id = written["fact"]["id"].clone();
    assert_eq!(written["fact"]["writtenBy"], json!("ada"));
    let (code, _) = mo.err("memory/server/delete", json!({"id": id})).await;
    assert_eq!(code, -32005);
    let (code, _) = mo.err("memory/delete", json!({"id": id})).await;
    assert_eq!(
        code, -32602,
        "a server-wide fact is not the project's to erase"
    );
    let shared = vera.ok("memory/list", json!({"server": true})).await;
    assert_eq!(shared["items"][0]["body"], json!("MIT everywhere"));
    assert_eq!(
        vera.ok("memory/search", json!({"query": "license"})).await,
        json!([{"layer": "server", "topic": "license", "body": "MIT everywhere"}])
    );
    ada.ok("memory/server/delete", json!({"id": id})).await;
    assert_eq!(
        vera.ok("memory/list", json!({"server": true})).await["items"],
        json!([])
    );
}

#[actix_web::test]
async fn a_fact_the_write_gate_refuses_is_not_remembered() {
    let base = crate::budget::base_packet_tokens().await;
    // About 5 × base tokens, past the room a window of 4 × base leaves under the guard's
    // ceiling, floor(window × 0.9) − 500; a window that small would go without <remember>.
    let fact = "the deploy notes say ".repeat(base);
    let llm = FakeLlm::start([
        Step::reply(format!(
            "<remember topic=\"deploy notes\">{fact}</remember><update>tried</update>"
        )),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = crate::budget::app_with(&llm, 4 * base).await;
    let (mut client, _) = app.client_in_project("tight").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "x"}))
        .await;
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "remember://*").await,
        [("remember://turn_1/deploy%20notes".to_string(), 413)]
    );
    assert_eq!(
        client.ok("memory/list", json!({})).await["items"],
        json!([])
    );
}

#[actix_web::test]
async fn disabling_the_memory_plugin_leaves_no_tool_section_or_method() {
    let llm = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGINS_DISABLED", "memory")]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    ask(&mut client, "Anything remembered about tests?").await;
    let system = crate::support::system_message(&llm.requests()[0]);
    assert!(
        !system.contains("<remember") && !system.contains("<recall>"),
        "{system}"
    );
    let (code, _) = client.err("memory/list", json!({})).await;
    assert_eq!(code, -32601);
}

#[actix_web::test]
async fn a_fact_a_person_set_outranks_the_model_s_remember() {
    let llm = FakeLlm::start(remembering("test command", "cargo test"));
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    client
        .ok(
            "memory/set",
            json!({"topic": "Test command", "body": "make check"}),
        )
        .await;
    let result = ask(&mut client, "Which test command?").await;
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "remember://*").await,
        [("remember://turn_1/test%20command".to_string(), 409)]
    );
    let next = user_message(&llm.requests()[1]);
    assert!(
        next.contains("A person set this topic") && next.contains("make check"),
        "the model reads the person's fact: {next}"
    );
    let facts = client.ok("memory/list", json!({})).await;
    assert_eq!(facts["items"][0]["body"], json!("make check"));
    let history = client.ok("memory/list", json!({"history": true})).await;
    assert_eq!(history["items"], json!([]));
}

/// The project's facts as `(topic, transient)`.
async fn transience(client: &mut Client) -> Vec<(Value, Value)> {
    client.ok("memory/list", json!({})).await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fact| (fact["topic"].clone(), fact["transient"].clone()))
        .collect()
}

#[actix_web::test]
async fn a_transient_fact_is_pruned_once_the_project_started_so_many_runs_after_it() {
    let llm = FakeLlm::start([
        Step::reply(
            "<remember topic=\"migration\" transient>The users table is renamed; the code is not yet.</remember>\
             <remember topic=\"migration plan\" transient=\"false\">Rename first, then the code.</remember>\
             <update>kept them</update>",
        ),
        Step::reply("<summarize>Remembered.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_MEMORY_TRANSIENT_RUNS", "2")]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    ask(&mut client, "Start the users migration.").await;
    assert_eq!(
        transience(&mut client).await,
        [
            (json!("migration"), json!(true)),
            (json!("migration plan"), Value::Null)
        ],
        "only the fact marked transient is"
    );

    ask(&mut client, "Where does the users migration stand?").await;
    let memory = memory_section(&user_of(&llm, "Where does the users migration stand?"))
        .unwrap()
        .to_owned();
    assert!(
        memory.contains("the code is not yet"),
        "one run later: {memory}"
    );

    ask(&mut client, "Is the users migration done?").await;
    let user = user_of(&llm, "Is the users migration done?");
    assert!(
        !user.contains("the code is not yet"),
        "pruned before recall: {user}"
    );
    assert!(user.contains("Rename first, then the code."), "{user}");
    assert_eq!(
        transience(&mut client).await,
        [(json!("migration plan"), Value::Null)]
    );
}

#[actix_web::test]
async fn the_history_of_a_topic_is_folded_past_its_bound_and_lists_the_count() {
    let app = TestApp::start_with(&[("RUMMY_MEMORY_HISTORY_PER_TOPIC", "2")]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    for body in ["npm test", "yarn test", "make test", "make check"] {
        client
            .ok("memory/set", json!({"topic": "test command", "body": body}))
            .await;
    }
    let history = client.ok("memory/list", json!({"history": true})).await;
    let items: Vec<(Value, Value)> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["body"].clone(), item["folded"].clone()))
        .collect();
    assert_eq!(
        items,
        [
            (json!("make test"), Value::Null),
            (json!("yarn test"), json!(1))
        ],
        "the newest two; the oldest folded into the older of them"
    );
    assert_eq!(
        client.ok("memory/search", json!({"query": "npm"})).await,
        json!([]),
        "a folded item is recalled no more"
    );
}

#[actix_web::test]
async fn a_client_s_remember_marks_a_fact_transient_with_its_attribute() {
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = client.start_run("fake").await;
    for (topic, attributes) in [
        ("wip", json!({"transient": true})),
        ("plan", json!({"transient": false, "note": "x"})),
    ] {
        client
            .ok(
                "remember",
                json!({"run": run, "path": topic, "body": "kept", "attributes": attributes}),
            )
            .await;
    }
    assert_eq!(
        transience(&mut client).await,
        [(json!("plan"), Value::Null), (json!("wip"), json!(true))]
    );
}

#[actix_web::test]
async fn a_chinese_or_japanese_question_recalls_the_facts_that_share_its_words() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>每天凌晨三点。</summarize>"),
        Step::reply("<summarize>makeで。</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    for (topic, body) in [
        ("数据库备份", "每天凌晨三点用pg_dump备份数据库。"),
        ("デプロイ手順", "本番へのデプロイはmakeで行う。"),
        ("test command", "make check"),
    ] {
        client
            .ok("memory/set", json!({"topic": topic, "body": body}))
            .await;
    }

    ask(&mut client, "数据库什么时候备份？").await;
    let user = user_of(&llm, "数据库什么时候备份？");
    let memory = memory_section(&user).unwrap_or_else(|| panic!("no <memory> in {user}"));
    assert!(
        memory.contains("- [project] 数据库备份: 每天凌晨三点用pg_dump备份数据库。"),
        "{memory}"
    );
    assert!(!memory.contains("デプロイ"), "{memory}");

    ask(&mut client, "本番へのデプロイ方法を教えて。").await;
    let user = user_of(&llm, "本番へのデプロイ方法を教えて。");
    let memory = memory_section(&user).unwrap_or_else(|| panic!("no <memory> in {user}"));
    assert!(
        memory.contains("- [project] デプロイ手順: 本番へのデプロイはmakeで行う。"),
        "{memory}"
    );
    assert!(!memory.contains("数据库"), "{memory}");

    assert_eq!(
        client.ok("memory/search", json!({"query": "手順"})).await,
        json!([{"layer": "project", "topic": "デプロイ手順", "body": "本番へのデプロイはmakeで行う。"}]),
        "two characters are a word"
    );
    let (code, _) = client.err("memory/search", json!({"query": "手"})).await;
    assert_eq!(code, -32602, "one is not");
}
