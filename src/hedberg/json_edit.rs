//! JSON-shaped edit bodies: `{"search": "…", "replace": "…"}` and the lenient
//! `{search="…", replace="…"}` form models sometimes write.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// A search/replace pair read from a JSON-shaped body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonEdit {
    /// Text to find.
    pub search: String,
    /// Replacement text (`""` when the body names none).
    pub replace: String,
}

static LOOSE_SEARCH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"search\s*=\s*"([^"]*)""#).ok());
static LOOSE_REPLACE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"replace\s*=\s*"([^"]*)""#).ok());

/// Reads a JSON edit body. Returns `None` unless the trimmed text starts with `{`, mentions
/// `search`, and either parses as a JSON object with a non-null `search` or (when it is not
/// valid JSON) contains a `search="…"` assignment.
///
/// Non-string JSON values are taken as their JSON text (`5` becomes `"5"`).
pub fn parse_json_edit(text: &str) -> Option<JsonEdit> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') || !trimmed.contains("search") {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value) => strict_edit(&value),
        Err(_) => loose_edit(trimmed),
    }
}

fn strict_edit(value: &Value) -> Option<JsonEdit> {
    let object = value.as_object()?;
    let search = object.get("search").and_then(value_text)?;
    let replace = object
        .get("replace")
        .and_then(value_text)
        .unwrap_or_default();
    Some(JsonEdit { search, replace })
}

fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

fn loose_edit(text: &str) -> Option<JsonEdit> {
    let capture = |pattern: &LazyLock<Option<Regex>>| {
        pattern
            .as_ref()?
            .captures(text)?
            .get(1)
            .map(|m| m.as_str().to_string())
    };
    let search = capture(&LOOSE_SEARCH)?;
    let replace = capture(&LOOSE_REPLACE).unwrap_or_default();
    Some(JsonEdit { search, replace })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(search: &str, replace: &str) -> Option<JsonEdit> {
        Some(JsonEdit {
            search: search.to_string(),
            replace: replace.to_string(),
        })
    }

    #[test]
    fn strict_json() {
        assert_eq!(
            parse_json_edit(r#" {"search":"a","replace":"b"} "#),
            edit("a", "b")
        );
        assert_eq!(parse_json_edit(r#"{"search":"a"}"#), edit("a", ""));
        assert_eq!(
            parse_json_edit(r#"{"search":5,"replace":6}"#),
            edit("5", "6")
        );
    }

    #[test]
    fn lenient_assignments() {
        assert_eq!(
            parse_json_edit(r#"{search="a", replace = "b"}"#),
            edit("a", "b")
        );
        assert_eq!(parse_json_edit(r#"{search="a"}"#), edit("a", ""));
    }

    #[test]
    fn not_an_edit() {
        assert_eq!(parse_json_edit(r#"{"search":null,"replace":"x"}"#), None);
        assert_eq!(parse_json_edit(r#"{"research":"x"}"#), None);
        assert_eq!(parse_json_edit(r#"{"find":"a"}"#), None);
        assert_eq!(parse_json_edit(r#"["search"]"#), None);
        assert_eq!(parse_json_edit("search for {x}"), None);
        assert_eq!(parse_json_edit("{ search for x"), None);
    }
}
