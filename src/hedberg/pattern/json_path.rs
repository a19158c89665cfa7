//! The JSONPath subset of the pattern language: `.key`, `..` (recursive descent), `.*`,
//! `[n]`, `[*]`, `['k']`, `["k"]`. Keys are the document's own keys only.

use std::collections::HashSet;

use serde_json::Value;

use crate::hedberg::budget;

/// One selection step.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// An object member (or an array element named by its decimal index).
    Key(String),
    /// Every element or member value.
    Wildcard,
    /// An array element; `None` for an index that is not a number (never matches).
    Index(Option<i64>),
    /// The node itself and every object or array below it.
    Descendants,
}

/// A parsed JSONPath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

/// Whether a pattern reads as JSONPath: `$.` followed by a letter, `_`, `*`, `@`, `.` or `[`,
/// or `$[`; and no `/` anywhere.
pub(crate) fn looks_like_json_path(pattern: &str) -> bool {
    if pattern.contains('/') {
        return false;
    }
    if pattern.starts_with("$[") {
        return true;
    }
    pattern
        .strip_prefix("$.")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_alphabetic() || "_*@.[".contains(c))
}

impl JsonPath {
    /// Parses the path; `None` when it is malformed (such a path matches nothing).
    pub(super) fn parse(pattern: &str) -> Option<Self> {
        let mut rest = pattern.strip_prefix('$')?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("..") {
                steps.push(Step::Descendants);
                rest = after;
                if rest.starts_with(|c: char| c != '[' && c != '.') {
                    rest = member_step(rest, &mut steps)?;
                }
            } else if let Some(after) = rest.strip_prefix('.') {
                rest = member_step(after, &mut steps)?;
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']')?;
                steps.push(bracket_step(after.get(..end)?));
                rest = after.get(end + 1..)?;
            } else {
                return None;
            }
        }
        Some(Self { steps })
    }

    /// The selected values, in document order, each at most once. Each value visited is a
    /// step of the thread's budget; once it is spent nothing more is selected.
    pub(super) fn select<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        let budget = budget::current();
        let mut nodes = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            let mut seen: HashSet<*const Value> = HashSet::new();
            let mut keep = |value: &'v Value| {
                if budget.charge(1).is_ok() && seen.insert(value as *const Value) {
                    next.push(value);
                }
            };
            for node in nodes {
                if budget.exceeded().is_some() {
                    return Vec::new();
                }
                match step {
                    Step::Key(key) => member(node, key).into_iter().for_each(&mut keep),
                    Step::Wildcard => children(node).for_each(&mut keep),
                    Step::Index(index) => element(node, *index).into_iter().for_each(&mut keep),
                    Step::Descendants => descendants(node, &mut keep),
                }
            }
            if next.is_empty() {
                return next;
            }
            nodes = next;
        }
        nodes
    }
}

fn member_step<'p>(text: &'p str, steps: &mut Vec<Step>) -> Option<&'p str> {
    if let Some(after) = text.strip_prefix('*') {
        steps.push(Step::Wildcard);
        return Some(after);
    }
    let end = text.find(['.', '[']).unwrap_or(text.len());
    let key = text.get(..end)?;
    if key.is_empty() {
        return None;
    }
    steps.push(Step::Key(key.to_string()));
    text.get(end..)
}

fn bracket_step(content: &str) -> Step {
    let trimmed = content.trim();
    if trimmed == "*" {
        return Step::Wildcard;
    }
    for quote in ['\'', '"'] {
        if let Some(key) = trimmed
            .strip_prefix(quote)
            .and_then(|inner| inner.strip_suffix(quote))
        {
            return Step::Key(key.to_string());
        }
    }
    Step::Index(leading_integer(trimmed))
}

/// The integer at the start of the text (`"1:2"` gives 1), as JavaScript's `parseInt` reads it.
fn leading_integer(text: &str) -> Option<i64> {
    let digits_start = usize::from(text.starts_with(['-', '+']));
    let digits_end = text
        .get(digits_start..)?
        .find(|c: char| !c.is_ascii_digit())
        .map_or(text.len(), |offset| digits_start + offset);
    text.get(..digits_end)?.parse().ok()
}

fn member<'v>(node: &'v Value, key: &str) -> Option<&'v Value> {
    match node {
        Value::Object(map) => map.get(key),
        Value::Array(items) => {
            let canonical = key == "0" || !key.starts_with('0');
            let index: usize = key.parse().ok().filter(|_| canonical)?;
            items.get(index)
        }
        _ => None,
    }
}

fn children<'v>(node: &'v Value) -> Box<dyn Iterator<Item = &'v Value> + 'v> {
    match node {
        Value::Object(map) => Box::new(map.values()),
        Value::Array(items) => Box::new(items.iter()),
        _ => Box::new(std::iter::empty()),
    }
}

fn element(node: &Value, index: Option<i64>) -> Option<&Value> {
    let items = node.as_array()?;
    items.get(usize::try_from(index?).ok()?)
}

/// Pre-order: the node, then every object or array below it (primitives are not yielded).
fn descendants<'v>(node: &'v Value, keep: &mut impl FnMut(&'v Value)) {
    let mut stack = vec![node];
    while let Some(current) = stack.pop() {
        keep(current);
        let mut containers: Vec<&'v Value> = children(current)
            .filter(|child| child.is_object() || child.is_array())
            .collect();
        containers.reverse();
        stack.extend(containers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn select(path: &str, document: &Value) -> Vec<Value> {
        JsonPath::parse(path)
            .map(|path| path.select(document).into_iter().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn steps() {
        let doc = json!({"name":"alice","items":[{"id":1},{"id":2}],"nested":{"deep":{"value":42}},"n":null});
        assert_eq!(select("$.name", &doc), vec![json!("alice")]);
        assert_eq!(select("$.items[1].id", &doc), vec![json!(2)]);
        assert_eq!(select("$.items.0.id", &doc), vec![json!(1)]);
        assert_eq!(select("$..value", &doc), vec![json!(42)]);
        assert_eq!(select("$..id", &doc), vec![json!(1), json!(2)]);
        assert_eq!(
            select("$.items[*]", &doc),
            vec![json!({"id":1}), json!({"id":2})]
        );
        assert_eq!(select("$['nested'][\"deep\"].*", &doc), vec![json!(42)]);
        assert_eq!(select("$.n", &doc), vec![Value::Null]);
        assert_eq!(select("$..", &json!({"a":1})), vec![json!({"a":1})]);
    }

    #[test]
    fn no_inherited_or_out_of_range_members() {
        let doc = json!({"items":[1,2,3]});
        for path in [
            "$.items.length",
            "$.constructor",
            "$.items[5]",
            "$.items[-1]",
            "$.items[?(@)]",
            "$.items.01",
        ] {
            assert!(select(path, &doc).is_empty(), "{path}");
        }
        assert_eq!(select("$.items[1:2]", &doc), vec![json!(2)]);
    }

    #[test]
    fn malformed_paths() {
        for path in ["$.", "$.a[", "$x", "$[0", "$.a.[0]"] {
            assert_eq!(JsonPath::parse(path), None, "{path}");
        }
    }

    #[test]
    fn detection() {
        for path in ["$.a", "$..a", "$[0]", "$.*", "$.@x", "$._"] {
            assert!(looks_like_json_path(path), "{path}");
        }
        for other in ["$.", "$.+", "$", "$.a/b", "$1.00", "/$.a/"] {
            assert!(!looks_like_json_path(other), "{other}");
        }
    }
}
