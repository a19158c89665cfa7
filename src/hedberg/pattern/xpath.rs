//! XPath 1.0 patterns over XML bodies. A body that does not parse as XML matches nothing.

mod cost;

use std::panic::{catch_unwind, AssertUnwindSafe};

use sxd_document::dom::{ChildOfElement, ChildOfRoot, Document};
use sxd_xpath::{Context, Factory, Value};

use self::cost::{CostModel, Shape};
use crate::hedberg::budget;

/// Longest XPath expression accepted; bounds the expression parser's work.
const MAX_EXPRESSION_LENGTH: usize = 2048;
/// Deepest `(`/`[` nesting accepted in an expression (the parser recurses on it).
const MAX_EXPRESSION_NESTING: usize = 32;
/// Budget steps charged per node the XPath engine may visit: a visit there costs about as
/// much as scanning a kilobyte of text (sxd-xpath allocates and hashes on every one).
const STEPS_PER_VISIT: u64 = 16;
/// Deepest element nesting evaluated in a body.
const MAX_DOCUMENT_NESTING: usize = 256;

const AXES: &[&str] = &[
    "child",
    "descendant",
    "descendant-or-self",
    "parent",
    "ancestor",
    "ancestor-or-self",
    "following",
    "following-sibling",
    "preceding",
    "preceding-sibling",
    "self",
    "attribute",
    "namespace",
];

const FUNCTIONS: &[&str] = &[
    "last",
    "position",
    "count",
    "id",
    "local-name",
    "namespace-uri",
    "name",
    "string",
    "concat",
    "starts-with",
    "contains",
    "substring-before",
    "substring-after",
    "substring",
    "string-length",
    "normalize-space",
    "translate",
    "boolean",
    "not",
    "true",
    "false",
    "lang",
    "number",
    "sum",
    "floor",
    "ceiling",
    "round",
    "text",
    "node",
    "comment",
    "processing-instruction",
];

/// A validated XPath expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XPathPattern {
    expression: String,
    cost: CostModel,
}

/// Whether a pattern reads as XPath: `//` and a name-like character, or a `/` path that
/// uses an axis (`child::`) or a predicate starting with `@`, a number, or a function call.
pub(crate) fn looks_like_xpath(pattern: &str) -> bool {
    if let Some(rest) = pattern.strip_prefix("//") {
        return rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || "_*@.".contains(c));
    }
    if !pattern.starts_with('/') {
        return false;
    }
    AXES.iter()
        .any(|axis| pattern.contains(&format!("{axis}::")))
        || predicates(pattern).any(|content| {
            let trimmed = content.trim();
            trimmed.starts_with('@')
                || (!trimmed.is_empty() && trimmed.chars().all(|c| c.is_ascii_digit()))
                || FUNCTIONS
                    .iter()
                    .any(|function| content.contains(&format!("{function}(")))
        })
}

fn predicates(pattern: &str) -> impl Iterator<Item = &str> {
    pattern
        .split('[')
        .skip(1)
        .filter_map(|piece| piece.split_once(']').map(|(content, _)| content))
}

impl XPathPattern {
    /// Validates the expression; `None` when it is too long, too deeply nested or does not
    /// parse as XPath 1.0.
    pub(super) fn compile(expression: &str) -> Option<Self> {
        if expression.len() > MAX_EXPRESSION_LENGTH || nesting(expression) > MAX_EXPRESSION_NESTING
        {
            return None;
        }
        let built = catch_unwind(|| Factory::new().build(expression).ok().flatten().is_some());
        built.unwrap_or(false).then(|| Self {
            expression: expression.to_string(),
            cost: CostModel::of(expression),
        })
    }

    /// The text content of the first selected node (document order), or `None` when the
    /// body is not XML or nothing is selected. A non-node result counts when it is true.
    ///
    /// The XPath engine cannot be stopped once it runs, so the thread's [`budget`] is charged
    /// up front with the most nodes the evaluation can visit on this document
    /// ([`CostModel::visits`]): `count()` inside a predicate, quadratic or worse, is refused
    /// before it starts instead of running for minutes. Once the budget is spent the result
    /// is `None` and the budget says why.
    pub(super) fn first_text(&self, subject: &str) -> Option<String> {
        if document_nesting(subject) > MAX_DOCUMENT_NESTING {
            return None;
        }
        let budget = budget::current();
        let package = sxd_document::parser::parse(subject).ok()?;
        let document = package.as_document();
        let shape = shape(&document);
        budget.charge(shape.nodes).ok()?;
        let visits = self.cost.visits(shape);
        budget.charge(visits.saturating_mul(STEPS_PER_VISIT)).ok()?;
        catch_unwind(AssertUnwindSafe(|| self.evaluate(&document)))
            .ok()
            .flatten()
    }

    fn evaluate(&self, document: &Document<'_>) -> Option<String> {
        let xpath = Factory::new().build(&self.expression).ok()??;
        let value = xpath.evaluate(&Context::new(), document.root()).ok()?;
        match value {
            Value::Nodeset(nodes) => nodes.document_order_first().map(|node| node.string_value()),
            other => other.boolean().then(|| other.string()),
        }
    }
}

/// Counts the document's nodes, its depth and its widest node.
fn shape(document: &Document<'_>) -> Shape {
    let children = document.root().children();
    let mut shape = Shape {
        nodes: 1,
        depth: 0,
        fan_out: children.len() as u64,
    };
    let mut pending: Vec<(sxd_document::dom::Element<'_>, u64)> = Vec::new();
    for child in children {
        shape.nodes += 1;
        if let ChildOfRoot::Element(element) = child {
            pending.push((element, 1));
        }
    }
    while let Some((element, depth)) = pending.pop() {
        let children = element.children();
        let attributes = element.attributes().len() as u64;
        shape.depth = shape.depth.max(depth);
        shape.fan_out = shape.fan_out.max(children.len() as u64 + attributes);
        shape.nodes += attributes;
        for child in children {
            shape.nodes += 1;
            if let ChildOfElement::Element(inner) = child {
                pending.push((inner, depth + 1));
            }
        }
    }
    shape
}

fn nesting(expression: &str) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0;
    for c in expression.chars() {
        match c {
            '(' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Upper estimate of element nesting: opening tags minus closing and self-closing ones.
fn document_nesting(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut deepest = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        let next = bytes.get(index + 1).copied();
        if byte == b'<' && next.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
            depth += 1;
            deepest = deepest.max(depth);
        } else if (byte == b'<' && next == Some(b'/')) || (byte == b'/' && next == Some(b'>')) {
            depth = depth.saturating_sub(1);
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;

    const DOC: &str = r#"<root><item id="3"><name>test</name></item><item id="5"/></root>"#;

    fn first(expression: &str, subject: &str) -> Option<String> {
        XPathPattern::compile(expression).and_then(|xpath| xpath.first_text(subject))
    }

    #[test]
    fn selections() {
        assert_eq!(first("//name", DOC), Some("test".into()));
        assert_eq!(first("//item[@id='5']", DOC), Some(String::new()));
        assert_eq!(first("//item/@id", DOC), Some("3".into()));
        assert!(first("/root/item[2]", DOC).is_some());
        assert_eq!(first("//missing", DOC), None);
        assert_eq!(first("//div", "just plain text"), None);
        assert_eq!(first("//a", "<a><b></a>"), None);
    }

    #[test]
    fn hostile_input_is_refused() {
        assert_eq!(
            XPathPattern::compile(&format!("//a{}", "[(".repeat(40))),
            None
        );
        let deep = "<a>".repeat(10_000);
        assert_eq!(first("//a", &deep), None);
        assert_eq!(XPathPattern::compile("//a[["), None);
    }

    #[test]
    fn quadratic_expressions_run_out_of_budget() {
        let body = format!("<r>{}</r>", "<i/>".repeat(3_000));
        let limited = || {
            Rc::new(budget::Budget::new(budget::Limits {
                max_steps: 1_000_000,
                ..budget::Limits::default()
            }))
        };
        let spent = limited();
        let text = budget::scoped(Rc::clone(&spent), || {
            first("//*[count(//*) > count(preceding::*)]", &body)
        });
        assert_eq!(text, None);
        assert_eq!(spent.exceeded(), Some(budget::WorkLimit::Steps(1_000_000)));
        let enough = limited();
        let cheap = budget::scoped(Rc::clone(&enough), || first("//i[1]", &body));
        assert_eq!(cheap, Some(String::new()));
        assert_eq!(enough.exceeded(), None);
    }

    #[test]
    fn detection() {
        for xpath in [
            "//item",
            "//*",
            "/root/item[1]",
            "/a/child::b",
            "/a[@id]",
            "/a[contains(., 'x')]",
        ] {
            assert!(looks_like_xpath(xpath), "{xpath}");
        }
        for other in [
            "/root/item",
            "/path/to/std::vector.html",
            "//",
            "// comment",
            "a//b",
            "/a[b]",
        ] {
            assert!(!looks_like_xpath(other), "{other}");
        }
    }
}
