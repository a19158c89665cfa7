//! Runs the hedberg contract vectors this module owns: `parse` (ops `response`, `attrs`) and
//! `heal` (ops `status`, `progress`, `repetition`). Loads `tests/data/hedberg-vectors.json`
//! and, when `RUMMY_HEDBERG_VECTORS` names another file, that file too.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::healer::{
    heal_status, HealedStatus, HealerLimits, ProgressTracker, RepetitionTracker, ToolCall,
    TurnSignals, Verdict,
};
use super::{normalize_attrs, parse};

fn load(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let document: Value = serde_json::from_str(&text).unwrap();
    document["vectors"].as_array().unwrap().clone()
}

fn vector_files() -> Vec<String> {
    let mut files = vec![format!(
        "{}/tests/data/hedberg-vectors.json",
        env!("CARGO_MANIFEST_DIR")
    )];
    if let Ok(extra) = std::env::var("RUMMY_HEDBERG_VECTORS") {
        files.push(extra);
    }
    files
}

/// Drops what the vectors treat as absent: nulls, `false` flags, empty `flags`, and at
/// command level an empty `body`.
fn normalize_command(command: &Value) -> Value {
    let mut object = Map::new();
    for (key, value) in command.as_object().unwrap() {
        let absent = value.is_null()
            || (matches!(key.as_str(), "sed" | "preview") && *value == json!(false))
            || (matches!(key.as_str(), "flags" | "body") && *value == json!(""));
        if absent {
            continue;
        }
        let value = if key == "blocks" {
            Value::Array(
                value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(normalize_block)
                    .collect(),
            )
        } else {
            value.clone()
        };
        object.insert(key.clone(), value);
    }
    Value::Object(object)
}

fn normalize_block(block: &Value) -> Value {
    let mut object = Map::new();
    for (key, value) in block.as_object().unwrap() {
        let absent = (key == "sed" && *value == json!(false))
            || (key == "flags" && (*value == json!("") || value.is_null()));
        if !absent {
            object.insert(key.clone(), value.clone());
        }
    }
    Value::Object(object)
}

fn check_response(input: &Value, expected: &Value) -> Result<(), String> {
    let output = parse(input["content"].as_str().unwrap(), &super::tags::bundled());
    let actual: Vec<Value> = output
        .commands
        .iter()
        .map(|command| normalize_command(&command.to_json()))
        .collect();
    let wanted: Vec<Value> = expected["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(normalize_command)
        .collect();
    if actual != wanted {
        return Err(format!(
            "commands\n   got {}\n  want {}",
            json!(actual),
            json!(wanted)
        ));
    }
    if let Some(warnings) = expected["warnings"].as_array() {
        if warnings.is_empty() != output.warnings.is_empty() {
            return Err(format!(
                "warnings: got {:?}, want {warnings:?}",
                output.warnings
            ));
        }
    }
    if let Some(unparsed) = expected["unparsed"].as_str() {
        if unparsed != output.unparsed {
            return Err(format!(
                "unparsed: got {:?}, want {unparsed:?}",
                output.unparsed
            ));
        }
    }
    Ok(())
}

fn check_attrs(input: &Value, expected: &Value) -> Result<(), String> {
    let pairs = input["attrs"].as_array().unwrap().iter().map(|pair| {
        (
            pair[0].as_str().unwrap().to_owned(),
            pair[1].as_str().unwrap().to_owned(),
        )
    });
    let healed = normalize_attrs(pairs);
    let actual: Map<String, Value> = healed
        .iter()
        .map(|(name, value)| (name.to_owned(), value.to_json()))
        .collect();
    let actual = Value::Object(actual);
    if actual != expected["result"] {
        return Err(format!("got {actual}, want {}", expected["result"]));
    }
    Ok(())
}

fn check_status(input: &Value, expected: &Value) -> Result<(), String> {
    let names: Vec<&str> = input["command_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    let plugins = crate::plugins::Plugins::bundled(crate::plugins::tool::ToolSettings::default());
    let investigates = |name: &str| {
        plugins
            .get(name)
            .is_some_and(|tool| tool.effect().investigates())
    };
    let healed = heal_status(input["content"].as_str().unwrap(), names, investigates);
    let actual = match healed {
        HealedStatus::Summary(summary) => json!({"summary": summary, "update": null}),
        HealedStatus::Update(update) => json!({"summary": null, "update": update}),
    };
    let wanted = json!({"summary": expected["summary"], "update": expected["update"]});
    if actual != wanted {
        return Err(format!("got {actual}, want {wanted}"));
    }
    Ok(())
}

fn verdict_json(verdict: &Verdict) -> Value {
    match verdict {
        Verdict::Continue => json!({"continue": true}),
        Verdict::Complete => json!({"continue": false}),
        Verdict::Halt(reason) => {
            let mut object = json!({"continue": false, "reason_code": reason.code()});
            if let super::healer::HaltReason::Cycle { period, .. } = reason {
                object["period"] = json!(period);
            }
            object
        }
    }
}

/// Keeps the compared fields of an expected result (`reason` is reference text only).
fn compared(result: &Value) -> Value {
    let mut object = result.as_object().unwrap().clone();
    object.remove("reason");
    Value::Object(object)
}

fn check_steps(expected: &Value, verdicts: impl Iterator<Item = Verdict>) -> Result<(), String> {
    let actual: Vec<Value> = verdicts.map(|verdict| verdict_json(&verdict)).collect();
    let wanted: Vec<Value> = expected["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(compared)
        .collect();
    if actual != wanted {
        return Err(format!("got {}, want {}", json!(actual), json!(wanted)));
    }
    Ok(())
}

fn check_progress(input: &Value, expected: &Value) -> Result<(), String> {
    let mut tracker = ProgressTracker::new(HealerLimits::default());
    let steps = input["steps"].as_array().unwrap();
    let verdicts = steps.iter().map(|step| {
        tracker.assess(TurnSignals {
            summary: step["summary"].as_str(),
            update: step["update"].as_str(),
            status_healed: step["status_healed"].as_bool().unwrap_or(false),
            has_writes: step["has_writes"].as_bool().unwrap_or(false),
            has_reads: step["has_reads"].as_bool().unwrap_or(false),
        })
    });
    check_steps(expected, verdicts.collect::<Vec<_>>().into_iter())
}

fn calls(list: &Value) -> Vec<ToolCall> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|call| ToolCall {
            scheme: call["scheme"].as_str().unwrap().to_owned(),
            path: call["path"].as_str().map(str::to_owned),
            attributes: call["attributes"].as_object().cloned().unwrap_or_default(),
        })
        .collect()
}

fn check_repetition(input: &Value, expected: &Value) -> Result<(), String> {
    let mut tracker = RepetitionTracker::new(HealerLimits::default());
    let steps = input["steps"].as_array().unwrap();
    let verdicts: Vec<Verdict> = steps
        .iter()
        .map(|step| tracker.assess(&calls(&step["action_calls"]), &calls(&step["write_calls"])))
        .collect();
    check_steps(expected, verdicts.into_iter())
}

#[test]
fn parse_and_heal_vectors_pass() {
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for file in vector_files() {
        for vector in load(&file) {
            let kind = vector["kind"].as_str().unwrap();
            let op = vector["input"]["op"].as_str().unwrap_or_default();
            let check = match (kind, op) {
                ("parse", "response") => check_response,
                ("parse", "attrs") => check_attrs,
                ("heal", "status") => check_status,
                ("heal", "progress") => check_progress,
                ("heal", "repetition") => check_repetition,
                _ => continue,
            };
            let tally = counts.entry(format!("{kind}/{op}")).or_default();
            tally.0 += 1;
            match check(&vector["input"], &vector["expected"]) {
                Ok(()) => tally.1 += 1,
                Err(message) => failures.push(format!("{}: {message}", vector["id"])),
            }
        }
    }
    for (group, (total, passed)) in &counts {
        println!("{group}: {passed}/{total} passed");
    }
    assert!(!counts.is_empty(), "no vectors found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
