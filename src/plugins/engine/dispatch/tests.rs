use serde_json::json;

use crate::db::enums::{EntryStatus, LoopMode};
use crate::plugins::bundled::tools::testing::TestRun;
use crate::plugins::tool::{ClientCall, ToolError};

#[test]
fn first_proposal_stops_later_actions_with_409() {
    let mut run = TestRun::new();
    run.put("known://a", "alpha");
    let outcome = run.respond(
        "<sh>npm test</sh><get path=\"known://a\"/><rm path=\"known://a\"/><update>testing</update>",
    );
    assert_eq!(
        run.status("sh://turn_1/npm%20test"),
        Some(EntryStatus::Proposed)
    );
    assert_eq!(
        run.status("get://turn_1/known%3A//a"),
        Some(EntryStatus::Conflict)
    );
    assert_eq!(
        run.status("rm://turn_1/known%3A//a"),
        Some(EntryStatus::Conflict)
    );
    assert!(
        run.entry("known://a").is_some(),
        "a cancelled rm removes nothing"
    );
    assert_eq!(outcome.proposals.len(), 1);
    assert_eq!(outcome.errors.len(), 2);
    assert!(outcome.errors[0].message.contains("<sh> is waiting"));
    assert_eq!(outcome.update_text.as_deref(), Some("testing"));
}

#[test]
fn an_error_stops_later_actions_and_overrides_summarize() {
    let mut run = TestRun::new();
    let outcome = run.respond(
        "<known path=\"known://x\" summary=\"k\">fact</known>\
         <rm path=\"known://nope\"/><env>ls</env><summarize>All done</summarize>",
    );
    assert_eq!(
        run.status("rm://turn_1/known%3A//nope"),
        Some(EntryStatus::NotFound)
    );
    assert_eq!(run.status("env://turn_1/ls"), Some(EntryStatus::Conflict));
    assert_eq!(
        run.status("known://x"),
        Some(EntryStatus::Ok),
        "lifecycle is never cancelled"
    );
    assert_eq!(outcome.summary_text, None);
    assert_eq!(outcome.update_text.as_deref(), Some("All done"));
    assert_eq!(
        run.status("summarize://All%20done"),
        Some(EntryStatus::Conflict)
    );
    assert!(outcome.proposals.is_empty());
}

#[test]
fn summarize_stands_when_actions_succeed_and_update_wins_over_it() {
    let mut run = TestRun::new();
    run.put("known://a", "alpha");
    let done = run.respond("<get path=\"known://a\"/><summarize>Read it</summarize>");
    assert_eq!(done.summary_text.as_deref(), Some("Read it"));
    assert!(done.flags.has_reads && !done.flags.has_act);
    let both = run.respond("<summarize>x</summarize><update>y</update>");
    assert_eq!(
        (both.summary_text, both.update_text.as_deref()),
        (None, Some("y"))
    );
    let neither = run.respond("<known path=\"known://b\">fact</known>");
    assert!(neither.needs_healing && neither.flags.has_writes);
}

#[test]
fn excluded_tools_are_recorded_as_403_and_not_run() {
    let mut run = TestRun::new().mode(LoopMode::Ask);
    run.put("src/a.js", "let a = 1;");
    let outcome = run.respond(
        "<sh>rm -rf /</sh><search>rust</search><set path=\"src/a.js\">s/1/2/</set>\
         <set path=\"src/a.js\" fidelity=\"index\"/>",
    );
    assert_eq!(
        run.status("sh://turn_1/rm%20-rf%20%2F"),
        Some(EntryStatus::Forbidden)
    );
    assert_eq!(
        run.status("search://turn_1/rust"),
        Some(EntryStatus::Forbidden)
    );
    assert_eq!(
        run.status("set://turn_1/src/a.js"),
        Some(EntryStatus::Forbidden)
    );
    assert_eq!(
        run.status("set://turn_1/src/a.js_2"),
        Some(EntryStatus::Conflict)
    );
    assert_eq!(run.entry("src/a.js").unwrap().body, "let a = 1;");
    assert!(outcome.errors[0].message.contains("ask mode"));
    assert!(outcome.errors[1].message.contains("no search backend"));
    assert!(outcome.errors[2].message.contains("files MUST NOT change"));
    assert!(outcome.proposals.is_empty());
    let fidelity_only = run.respond("<set path=\"src/a.js\" fidelity=\"index\"/>");
    assert!(
        fidelity_only.errors.is_empty(),
        "fidelity on files is allowed in ask mode"
    );

    let mut act = TestRun::new();
    act.respond("<search>rust</search><env>ls</env>");
    assert_eq!(
        act.status("search://turn_1/rust"),
        Some(EntryStatus::Forbidden)
    );
    assert_eq!(act.status("env://turn_1/ls"), Some(EntryStatus::Conflict));
}

#[test]
fn escaping_and_invalid_paths_are_400() {
    let mut run = TestRun::new();
    let outcome = run.respond(&format!(
        "<get path=\"../secret\"/><update>x</update><get path=\"{}\"/>",
        "a".repeat(600)
    ));
    assert_eq!(
        run.status("get://turn_1/..%2Fsecret"),
        Some(EntryStatus::BadRequest)
    );
    assert!(outcome.errors[0].message.contains("leaves the project"));
    assert_eq!(
        run.status("get://turn_1/invalid"),
        Some(EntryStatus::BadRequest)
    );
    let absolute = run.respond("<rm path=\"/etc/passwd\"/>");
    assert_eq!(absolute.errors[0].status, EntryStatus::BadRequest);
}

#[test]
fn bare_known_goes_under_known_and_naked_set_is_a_fact() {
    let mut run = TestRun::new();
    run.respond("<known path=\"auth/session\" summary=\"auth,cookie\">24h ttl</known>");
    let entry = run.entry("known://auth/session").unwrap();
    assert_eq!(entry.body, "24h ttl");
    assert_eq!(
        run.attribute("known://auth/session", "summary"),
        json!("auth,cookie")
    );
    assert!(run.entry("auth/session").is_none());
    let outcome = run.respond("<set>the sky is blue</set>");
    assert!(run.entry("known://the%20sky%20is%20blue").is_some());
    assert!(outcome.calls.iter().any(|call| call.tool == "known"));
}

#[test]
fn think_and_unregistered_tags_are_recorded_not_run() {
    let mut run = TestRun::new();
    let outcome = run.respond("<think>plan <rm path=\"known://a\"/></think><update>u</update>");
    assert_eq!(
        run.entry("think://turn_1/").unwrap().status,
        EntryStatus::Ok
    );
    assert!(outcome.errors.is_empty());
    assert_eq!(outcome.calls.len(), 2);
    assert_eq!(outcome.calls[0].path, "think://turn_1/");
}

#[test]
fn duplicate_targets_get_distinct_result_paths() {
    let mut run = TestRun::new();
    run.put("known://a", "alpha");
    run.respond("<get path=\"known://a\"/><get path=\"known://a\"/>");
    assert_eq!(
        run.status("get://turn_1/known%3A//a"),
        Some(EntryStatus::Ok)
    );
    assert_eq!(
        run.status("get://turn_1/known%3A//a_2"),
        Some(EntryStatus::Ok)
    );
}

#[test]
fn client_calls_run_the_same_chain_at_the_next_turn() {
    let mut run = TestRun::new();
    let outcome = run
        .call(
            "set",
            ClientCall {
                path: "known://deploy".into(),
                body: Some("staging".into()),
                ..ClientCall::default()
            },
        )
        .unwrap();
    assert!(outcome.errors.is_empty());
    assert_eq!(run.entry("known://deploy").unwrap().body, "staging");
    let sh = ClientCall {
        path: "npm test".into(),
        attributes: json!({ "command": "npm test" })
            .as_object()
            .cloned()
            .unwrap(),
        ..ClientCall::default()
    };
    let proposed = run.call("sh", sh).unwrap();
    assert_eq!(proposed.proposals.len(), 1);
    assert_eq!(proposed.proposals[0].path, "sh://turn_1/npm%20test");
    let fidelity = ClientCall {
        path: "known://*".into(),
        attributes: json!({ "fidelity": "summary" })
            .as_object()
            .cloned()
            .unwrap(),
        ..ClientCall::default()
    };
    run.call("set", fidelity).unwrap();
    assert_eq!(
        run.entry("known://deploy").unwrap().fidelity,
        crate::db::enums::Fidelity::Summary
    );
    let escape = ClientCall {
        path: "../x".into(),
        ..ClientCall::default()
    };
    assert!(matches!(
        run.call("rm", escape),
        Err(ToolError::InvalidParams(_))
    ));
    assert!(matches!(
        run.call(
            "nope",
            ClientCall {
                path: "x".into(),
                ..ClientCall::default()
            }
        ),
        Err(ToolError::UnknownTool(_))
    ));
    assert!(matches!(
        run.call("rm", ClientCall::default()),
        Err(ToolError::InvalidParams(_))
    ));
}

/// A gate with a token allowance that stays shut once it refused.
struct Allowance {
    left: i64,
    tripped: bool,
}

impl crate::budget::WriteGate for Allowance {
    fn admit(&mut self, write: &crate::budget::WriteIntent) -> Result<(), String> {
        if write.status.is_failure() {
            return Ok(());
        }
        if self.tripped || write.tokens_delta > self.left {
            self.tripped = true;
            return Err(format!(
                "Budget exceeded: {} tokens requested",
                write.tokens_delta
            ));
        }
        self.left -= write.tokens_delta.max(0);
        Ok(())
    }
}

#[test]
fn a_tripped_write_gate_rolls_the_command_back_and_fails_the_rest() {
    let mut run = TestRun::new();
    run.put("known://big", &"x".repeat(400));
    run.respond("<set path=\"known://big\" fidelity=\"archive\"/>");
    let mut gate = Allowance {
        left: 20,
        tripped: false,
    };
    let outcome = run.respond_gated(
        "<known path=\"known://small\">tiny fact</known>\
         <get path=\"known://big\"/><set path=\"known://small\">s/tiny/small/</set>",
        Some(&mut gate),
    );
    assert!(run.entry("known://small").is_some());
    assert_eq!(
        run.entry("known://big").unwrap().fidelity,
        crate::db::enums::Fidelity::Archive,
        "the refused get was rolled back"
    );
    assert_eq!(
        run.status("get://turn_2/known%3A//big"),
        Some(EntryStatus::TooLarge)
    );
    assert_eq!(
        run.status("set://turn_2/known%3A//small"),
        Some(EntryStatus::Conflict)
    );
    assert_eq!(run.entry("known://small").unwrap().body, "tiny fact");
    assert_eq!(outcome.errors.len(), 2);
    let refused = run.respond_gated(
        "<known path=\"known://later\">another</known>",
        Some(&mut gate),
    );
    assert!(run.entry("known://later").is_none());
    assert_eq!(run.status("known://turn_3/"), Some(EntryStatus::TooLarge));
    assert_eq!(refused.errors[0].status, EntryStatus::TooLarge);
    assert!(outcome.errors[0].message.contains("Budget exceeded"));
}

#[test]
fn calls_follow_the_response_order_one_per_command() {
    let mut run = TestRun::new();
    let outcome = run.respond(
        "<think>hm</think><get path=\"known://x\"/><known path=\"known://k\">fact</known>\
         <known path=\"known://e\"> </known><update>u</update>",
    );
    let tools: Vec<(&str, EntryStatus)> = outcome
        .calls
        .iter()
        .map(|call| (call.tool.as_str(), call.status))
        .collect();
    assert_eq!(
        tools,
        [
            ("think", EntryStatus::Ok),
            ("get", EntryStatus::NotFound),
            ("known", EntryStatus::Ok),
            ("known", EntryStatus::NoContent),
            ("update", EntryStatus::Ok)
        ]
    );
    assert!(outcome.calls[1].is_action && outcome.calls[2].is_write);
    assert_eq!(outcome.calls[1].fingerprint, "get:known://x[]");
}

#[test]
fn free_text_targets_are_not_paths_and_long_ones_still_record() {
    let mut run = TestRun::new();
    let outcome = run.respond("<sh>/usr/bin/make -C ../lib</sh>");
    assert_eq!(outcome.proposals.len(), 1, "{:?}", outcome.errors);
    let long = format!("<env>echo {}</env>", "é".repeat(900));
    let outcome = run.respond(&long);
    assert_eq!(outcome.proposals.len(), 1);
    assert_eq!(outcome.proposals[0].body.chars().count(), 905);
    let fact = run.respond(&format!(
        "<known path=\"known://{}\" summary=\"long path\">x</known>",
        "p".repeat(600)
    ));
    assert_eq!(fact.calls[0].path, "known://long%20path");
}

mod hostile {
    use proptest::prelude::*;

    use crate::plugins::bundled::tools::testing::TestRun;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("known://a".to_owned()),
            Just("known://*".to_owned()),
            Just("src/a.js".to_owned()),
            Just("src/*".to_owned()),
            Just("../x".to_owned()),
            Just("/etc/passwd".to_owned()),
            Just("unknown://q".to_owned()),
            Just("set://src/a.js".to_owned()),
            Just("s/a/b/g".to_owned()),
            Just("/(/".to_owned()),
            "\\PC{0,12}",
            "[a-z/:%*.]{0,20}",
        ]
    }

    fn command() -> impl Strategy<Value = String> {
        let tools = prop_oneof![
            Just("get"),
            Just("set"),
            Just("known"),
            Just("unknown"),
            Just("env"),
            Just("sh"),
            Just("rm"),
            Just("cp"),
            Just("mv"),
            Just("search"),
            Just("summarize"),
            Just("update"),
            Just("ask_user"),
            Just("think"),
            Just("mcp"),
        ];
        let attribute = prop_oneof![
            Just("path"),
            Just("to"),
            Just("fidelity"),
            Just("summary"),
            Just("line"),
            Just("limit"),
            Just("preview"),
            Just("question"),
            Just("body"),
            Just("search"),
        ];
        (
            tools,
            prop::collection::vec((attribute, text()), 0..3),
            text(),
        )
            .prop_map(|(tool, attributes, body)| {
                let attributes: String = attributes
                    .iter()
                    .map(|(name, value)| format!(" {name}=\"{}\"", value.replace('"', "")))
                    .collect();
                format!("<{tool}{attributes}>{body}</{tool}>")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn any_response_dispatches_without_failing(
            turns in prop::collection::vec(prop::collection::vec(command(), 1..6), 1..3)
        ) {
            let mut run = TestRun::new();
            run.put("known://a", "alpha");
            run.put("src/a.js", "let a = 1;\n");
            for commands in turns {
                let outcome = run.respond(&commands.concat());
                prop_assert_eq!(outcome.calls.len(), crate::parser::parse(&commands.concat(), &run.plugins.tags()).commands.len());
                for proposal in outcome.proposals {
                    let path = proposal.path.clone();
                    let _ = run.resolve(&path, crate::plugins::engine::resolve::Resolution::Accept, Some("ok"));
                }
            }
        }
    }
}
