//! Rules of a run, observed from outside: what the model is offered and what its commands
//! do under each flag, how a resolution ends or resumes a run, what a resumed or injected
//! loop inherits, and what the start of a loop demotes. The scripted LLM records every
//! request, so "the model was (not) called" and "the model was (not) told" are facts here.

mod demotion;
mod disk_changes;
mod flags;
mod inheritance;
mod resolution;
mod small_window;
mod turns;

use regex::Regex;
use serde_json::{json, Value};

use crate::support::{system_message, user_message, Client};

/// The `<prompt mode="…" tools="…">` tag the model got in one request.
#[derive(Debug)]
struct PromptTag {
    mode: String,
    tools: Vec<String>,
}

impl PromptTag {
    fn of(request: &Value) -> PromptTag {
        let user = user_message(request);
        let pattern = Regex::new(r#"<prompt mode="([a-z]+)" tools="([a-z_,]*)""#).unwrap();
        let captures = pattern
            .captures(&user)
            .unwrap_or_else(|| panic!("no <prompt> tag in the user message: {user}"));
        PromptTag {
            mode: captures[1].to_string(),
            tools: captures[2].split(',').map(str::to_string).collect(),
        }
    }

    fn offers(&self, tool: &str) -> bool {
        self.tools.iter().any(|offered| offered == tool)
    }
}

/// Whether the model was told about `tool` in this request: listed in `tools=` and
/// documented in the system message. Both or neither, or the test fails.
fn told_about(request: &Value, tool: &str) -> bool {
    let listed = PromptTag::of(request).offers(tool);
    let documented = system_message(request).contains(&format!("## <{tool}"));
    assert_eq!(
        listed, documented,
        "<{tool}> listed in tools= ({listed}) but documented ({documented})"
    );
    listed
}

/// The whole packet of one request, for "the model never saw X".
fn packet(request: &Value) -> String {
    format!("{}\n{}", system_message(request), user_message(request))
}

/// The run's history rows (`getRun`: every non-file, non-audit entry with its body and
/// attributes) whose scheme is `scheme`.
async fn history_of(client: &mut Client, run: &str, scheme: &str) -> Vec<Value> {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["scheme"] == scheme)
        .cloned()
        .collect()
}

/// Paths of the run's project-file entries (scheme null).
async fn file_entries(client: &mut Client, run: &str) -> Vec<String> {
    let entries = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    entries
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["scheme"].is_null())
        .map(|entry| entry["path"].as_str().unwrap().to_string())
        .collect()
}

/// `getEntries` fidelity of the one entry matching `pattern`.
async fn fidelity_of(client: &mut Client, run: &str, pattern: &str) -> String {
    let entries = client
        .ok("getEntries", json!({"run": run, "pattern": pattern}))
        .await;
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{pattern}: {entries:?}");
    entries[0]["fidelity"].as_str().unwrap().to_string()
}

fn alias(outcome: &Value) -> String {
    outcome["run"].as_str().unwrap().to_string()
}
