//! Test-only stand-in for the command parser: the first `<set>` tag of a model response.
//! The real parser (`crate::parser`) replaces it once both branches are merged.

use std::collections::BTreeMap;

/// Test-only stand-in for `crate::parser`: the attributes and raw body of the first `<set>`
/// tag of a response (double- or single-quoted or bare attribute values, self-closing or
/// closed by `</set>`).
pub(super) fn first_set_command(response: &str) -> Option<(BTreeMap<String, String>, String)> {
    let lower = response.to_ascii_lowercase();
    let start = lower.find("<set")? + 4;
    let mut attributes = BTreeMap::new();
    let mut rest = response.get(start..)?;
    loop {
        rest = rest.trim_start();
        if rest.starts_with("/>") {
            return Some((attributes, String::new()));
        }
        if let Some(after) = rest.strip_prefix('>') {
            let end = after
                .to_ascii_lowercase()
                .find("</set>")
                .unwrap_or(after.len());
            return Some((attributes, after.get(..end)?.to_string()));
        }
        let name_end =
            rest.find(|c: char| c == '=' || c == '>' || c == '/' || c.is_whitespace())?;
        let name = rest.get(..name_end)?.to_ascii_lowercase();
        rest = rest.get(name_end..)?.trim_start();
        let Some(after_equals) = rest.strip_prefix('=') else {
            attributes.insert(name, String::new());
            continue;
        };
        let after_equals = after_equals.trim_start();
        let (value, remainder) = match after_equals.chars().next()? {
            quote @ ('"' | '\'') => {
                let inner = after_equals.get(1..)?;
                let close = inner.find(quote)?;
                (inner.get(..close)?, inner.get(close + 1..)?)
            }
            _ => {
                let end = after_equals
                    .find(|c: char| c.is_whitespace() || c == '>')
                    .unwrap_or(after_equals.len());
                after_equals.split_at(end)
            }
        };
        attributes.entry(name).or_insert_with(|| value.to_string());
        rest = remainder;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_extraction_helper() {
        let (attributes, body) =
            first_set_command("x <SET path=\"a>b\" search='q' flag>s/a/b/</set> <set/>")
                .expect("set");
        assert_eq!(attributes.get("path").map(String::as_str), Some("a>b"));
        assert_eq!(attributes.get("search").map(String::as_str), Some("q"));
        assert_eq!(attributes.get("flag").map(String::as_str), Some(""));
        assert_eq!(body, "s/a/b/");
        let (self_closing, empty) = first_set_command("<set path=x search=\"b\"/>").expect("set");
        assert_eq!(self_closing.get("path").map(String::as_str), Some("x"));
        assert!(empty.is_empty());
    }
}
