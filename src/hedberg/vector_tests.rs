//! Runs the shared hedberg vectors (`tests/data/hedberg-vectors.json`, plus the file named
//! by `RUMMY_HEDBERG_VECTORS` when set) against the public API. Kinds `match`, `search`,
//! `replace`, `edit`, and `parse` ops `sed`, `edit_blocks`, `json_edit` are ours; the rest
//! belong to the parser and are skipped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::*;

fn vector_files() -> Vec<PathBuf> {
    let mut files =
        vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hedberg-vectors.json")];
    if let Some(extra) = std::env::var_os("RUMMY_HEDBERG_VECTORS") {
        files.push(PathBuf::from(extra));
    }
    files
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn field<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Checks one vector; `Ok(false)` when its kind/op is not hedberg's.
fn check(vector: &Value) -> Result<bool, String> {
    let input = &vector["input"];
    let expected = &vector["expected"];
    let op = input.get("op").and_then(Value::as_str).unwrap_or_default();
    match (field(vector, "kind"), op) {
        ("match", _) => check_match(input, expected),
        ("search", _) => check_search(input, expected),
        ("replace", "pattern") => check_pattern_replace(input, expected),
        ("replace", "edit") => {
            let block = EditBlock {
                search: text(input, "search"),
                replace: field(input, "replacement").to_string(),
                flags: field(input, "flags").to_string(),
                sed: input["sed"].as_bool().unwrap_or(false),
            };
            check_edit_outcome(apply_edit(field(input, "body"), &block), expected)
        }
        ("replace", "heuristic") => check_edit_outcome(
            apply_tolerant(
                field(input, "body"),
                field(input, "search"),
                field(input, "replacement"),
            ),
            expected,
        ),
        ("edit", "apply_set") => check_apply_set(input, expected),
        ("edit", "diff") => {
            let actual = unified_diff(
                field(input, "path"),
                field(input, "old"),
                field(input, "new"),
            );
            same(&json!(actual), &expected["result"])
        }
        ("parse", "sed") => {
            let blocks = parse_sed(field(input, "text"));
            let actual = if blocks.is_empty() {
                Value::Null
            } else {
                json!(blocks)
            };
            same(
                &normalize_blocks(actual),
                &normalize_blocks(expected["result"].clone()),
            )
        }
        ("parse", "edit_blocks") => {
            let actual: Vec<Value> = parse_edit_content(field(input, "text"))
                .into_iter()
                .map(|block| json!({"search": block.search, "replace": block.replace}))
                .collect();
            same(&json!(actual), &expected["result"])
        }
        ("parse", "json_edit") => {
            let actual = parse_json_edit(field(input, "text")).map_or(
                Value::Null,
                |edit| json!({"search": edit.search, "replace": edit.replace}),
            );
            same(&actual, &expected["result"])
        }
        _ => return Ok(false),
    }
    .map(|()| true)
}

fn same(actual: &Value, expected: &Value) -> Result<(), String> {
    if actual == expected {
        Ok(())
    } else {
        Err(format!("expected {expected}, got {actual}"))
    }
}

/// `flags: ""` and `sed: false` are the same as absent.
fn normalize_blocks(mut value: Value) -> Value {
    if let Some(blocks) = value.as_array_mut() {
        for block in blocks.iter_mut().filter_map(Value::as_object_mut) {
            block.retain(|key, item| {
                !(item.is_null()
                    || (key == "flags" && item == "")
                    || (key == "sed" && item == false))
            });
        }
    }
    value
}

fn check_match(input: &Value, expected: &Value) -> Result<(), String> {
    let repeat = input.get("repeat").and_then(Value::as_u64).unwrap_or(1);
    for _ in 0..repeat {
        let actual = match input["subject"].as_str() {
            None => false,
            Some(subject) => {
                pattern_match(field(input, "pattern"), subject).map_err(|e| e.to_string())?
            }
        };
        same(&json!(actual), &expected["result"])?;
    }
    Ok(())
}

fn check_search(input: &Value, expected: &Value) -> Result<(), String> {
    let hit = match input["subject"].as_str() {
        None => None,
        Some(subject) => {
            pattern_search(field(input, "pattern"), subject).map_err(|e| e.to_string())?
        }
    };
    let actual = match hit {
        None => json!({"found": false}),
        Some(SearchHit { matched, index }) => {
            let matched = match matched {
                Matched::Text(text) => json!(text),
                Matched::Json(value) => value,
            };
            json!({"found": true, "match": matched, "index": index})
        }
    };
    let mut expected = expected.clone();
    if expected["found"] == false {
        expected = json!({"found": false});
    }
    same(&actual, &expected)
}

fn check_pattern_replace(input: &Value, expected: &Value) -> Result<(), String> {
    let actual = match input["subject"].as_str() {
        None => None,
        Some(subject) => pattern_replace(
            field(input, "pattern"),
            field(input, "replacement"),
            subject,
        )
        .map_err(|e| e.to_string())?,
    };
    same(&json!(actual), &expected["result"])
}

fn check_edit_outcome(
    outcome: Result<Edited, HedbergError>,
    expected: &Value,
) -> Result<(), String> {
    let (patch, warning, error) = match outcome {
        Ok(edited) => (Some(edited.body), edited.warning, None),
        Err(error) => (None, None, Some(error.to_string())),
    };
    same(&json!(patch), &expected["patch"])?;
    check_messages(warning, error, expected)
}

fn check_messages(
    warning: Option<String>,
    error: Option<String>,
    expected: &Value,
) -> Result<(), String> {
    match (&error, expected["error"].as_str()) {
        (None, None) => {}
        (Some(actual), Some(wanted)) if actual.contains(wanted) => {}
        _ => {
            return Err(format!(
                "error: expected {}, got {error:?}",
                expected["error"]
            ))
        }
    }
    match (&warning, expected["warning"].as_array()) {
        (None, None) => Ok(()),
        (Some(actual), Some(wanted))
            if wanted
                .iter()
                .all(|w| w.as_str().is_some_and(|w| actual.contains(w))) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "warning: expected {}, got {warning:?}",
            expected["warning"]
        )),
    }
}

fn check_apply_set(input: &Value, expected: &Value) -> Result<(), String> {
    let original = field(input, "original");
    let is_file = field(input, "target") == "file";
    let plugins = crate::plugins::Plugins::bundled(crate::plugins::tool::ToolSettings::default());
    let parsed = crate::parser::parse(field(input, "response"), &plugins.tags());
    let revision = parsed
        .commands
        .into_iter()
        .find_map(|command| match command {
            crate::parser::Command::Set(set) => Some(set.operation),
            _ => None,
        })
        .ok_or("no <set> command in the response")?;
    let mode = if revision.is_edit() { "edit" } else { "write" };
    let (status, body, warning, error) = match revision.apply(original) {
        Ok(edited) => (
            if is_file { 202 } else { 200 },
            edited.body,
            edited.warning,
            None,
        ),
        Err(error) => (409, original.to_string(), None, Some(error.to_string())),
    };
    same(
        &json!({"mode": mode, "status": status, "body": body}),
        &json!({
            "mode": expected["mode"], "status": expected["status"], "body": expected["body"],
        }),
    )?;
    check_messages(warning, error, expected)
}

#[test]
fn shared_vectors_pass() {
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for path in vector_files() {
        let raw =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file: Value = serde_json::from_str(&raw).expect("vector file is JSON");
        for vector in file["vectors"].as_array().expect("vectors array") {
            let kind = field(vector, "kind").to_string();
            let key = match vector["input"].get("op").and_then(Value::as_str) {
                Some(op) => format!("{kind}/{op}"),
                None => kind,
            };
            let entry = counts.entry(key).or_default();
            match check(vector) {
                Ok(true) => entry.0 += 1,
                Ok(false) => entry.1 += 1,
                Err(reason) => failures.push(format!(
                    "{} ({}): {reason}",
                    field(vector, "id"),
                    field(vector, "note")
                )),
            }
        }
    }
    for (key, (passed, skipped)) in &counts {
        println!("{key}: {passed} passed, {skipped} skipped (not hedberg)");
    }
    assert!(
        failures.is_empty(),
        "{} vector(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(counts.values().map(|(passed, _)| passed).sum::<usize>() > 0);
}
