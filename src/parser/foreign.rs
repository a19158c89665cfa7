//! Foreign tool-call formats found in text outside tool tags, turned into tool elements.
//!
//! Models trained on other agents emit their native call syntax: Gemma/Qwen
//! `<|tool_call>call:get{path:"a"}<tool_call|>`, OpenAI `{"name":"get","arguments":{…}}`,
//! Mistral `[TOOL_CALLS] [...]`, Anthropic `<tool_use>…</tool_use>`, and XML wrapped in a
//! ```` ```xml ```` / `tool_code` / `tool_command` fence. Only text outside tool bodies is
//! rewritten, so a `<set>` body that contains such text stays verbatim. A call naming an
//! unknown tool stays text.

use serde_json::Value;

use super::scan::{Piece, RawElement};
use super::tags::{Tag, TagSet};

const QWEN_OPEN: &str = "<|tool_call>";
const QWEN_CLOSE: &str = "<tool_call|>";
const GEMMA_QUOTE: &str = "<|\"|>";
const MISTRAL_MARKER: &str = "[TOOL_CALLS]";
const FENCE: &str = "```";
const FENCE_LANGUAGES: [&str; 3] = ["tool_code", "tool_command", "xml"];
/// The longest name an Anthropic call may give, in bytes (up to its `</name>`).
const NAME_SPAN: usize = 256;
const NAME_CLOSE: &str = "</name>";

/// Rewrites foreign calls of the tools of `tags` and tool fences in the outside text of
/// `pieces`.
pub(crate) fn expand(pieces: Vec<Piece>, tags: &TagSet) -> Vec<Piece> {
    let mut fence_open = false;
    let mut expanded = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match piece {
            Piece::Text(text) => expand_text(&text, tags, &mut fence_open, &mut expanded),
            element @ Piece::Element(_) => expanded.push(element),
        }
    }
    expanded
}

fn expand_text(text: &str, tags: &TagSet, fence_open: &mut bool, out: &mut Vec<Piece>) {
    let mut text_start = 0;
    let mut cursor = 0;
    while let Some(offset) = text
        .get(cursor..)
        .and_then(|rest| rest.find(['`', '<', '{', '[']))
    {
        let at = cursor + offset;
        let rest = text.get(at..).unwrap_or_default();
        let found = if rest.starts_with(FENCE) {
            fence_marker(rest, fence_open).map(|length| (length, Vec::new()))
        } else {
            qwen_call(rest, tags)
                .or_else(|| anthropic_call(rest, tags))
                .or_else(|| openai_call(rest, tags).map(|(length, call)| (length, vec![call])))
                .or_else(|| mistral_calls(rest, tags))
        };
        match found {
            Some((length, elements)) => {
                if let Some(before) = text.get(text_start..at).filter(|t| !t.is_empty()) {
                    out.push(Piece::Text(before.to_owned()));
                }
                out.extend(elements.into_iter().map(Piece::Element));
                text_start = at + length;
                cursor = text_start;
            }
            None => cursor = at + 1,
        }
    }
    if let Some(rest) = text.get(text_start..).filter(|t| !t.is_empty()) {
        out.push(Piece::Text(rest.to_owned()));
    }
}

/// The length of a tool-fence marker to drop at the start of `rest`: the closing backticks
/// of an open tool fence, or an opener with its language and line break.
fn fence_marker(rest: &str, fence_open: &mut bool) -> Option<usize> {
    if *fence_open {
        *fence_open = false;
        return Some(FENCE.len());
    }
    let after = rest.get(FENCE.len()..)?;
    let language = FENCE_LANGUAGES
        .into_iter()
        .find(|language| after.starts_with(language))?;
    let after_language = after.get(language.len()..)?;
    let newline = if after_language.starts_with("\r\n") {
        2
    } else if after_language.starts_with('\n') {
        1
    } else {
        return None;
    };
    *fence_open = true;
    Some(FENCE.len() + language.len() + newline)
}

/// Builds the element a foreign call stands for. Arguments the tool's docs teach become
/// attributes; when the tool's main field is still empty, the first other argument fills
/// it (its value becomes the element text); remaining arguments stay attributes, where
/// attribute healing may promote one to `path`.
fn element_from_arguments(tool: Tag, arguments: Vec<(String, String)>) -> RawElement {
    let vocabulary = tool.spec.attributes;
    let (mut attrs, others): (Vec<_>, Vec<_>) = arguments
        .into_iter()
        .partition(|(name, _)| vocabulary.contains(&name.as_str()));
    let main_filled = attrs
        .iter()
        .any(|(name, value)| name == tool.spec.main_field && !value.is_empty());
    let mut body = String::new();
    for (name, value) in others {
        if !main_filled && body.is_empty() && !value.is_empty() {
            body = value;
        } else {
            attrs.push((name, value));
        }
    }
    RawElement {
        tool,
        attrs,
        body,
        closed: true,
    }
}

/// Resolves a possibly namespaced tool name (`rummy.nvim/get`, `x:get`, `functions.get`).
fn tool_from_call_name(name: &str, tags: &TagSet) -> Option<Tag> {
    let last = name.rsplit(['/', ':', '.']).next()?;
    tags.find(last)
}

fn json_arguments(value: &Value) -> Vec<(String, String)> {
    let object = match value {
        Value::Object(object) => Some(object.clone()),
        Value::String(text) => serde_json::from_str::<serde_json::Map<String, Value>>(text).ok(),
        _ => None,
    };
    object
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((name, text)),
            other => Some((name, other.to_string())),
        })
        .collect()
}

/// `{"name": …, "arguments": …}` (or `parameters`) naming a known tool.
fn call_from_json(value: &Value, tags: &TagSet) -> Option<RawElement> {
    let tool = tool_from_call_name(value.get("name")?.as_str()?, tags)?;
    let arguments = value
        .get("arguments")
        .or_else(|| value.get("parameters"))
        .map(json_arguments)
        .unwrap_or_default();
    Some(element_from_arguments(tool, arguments))
}

/// Reads one JSON value at the start of `text`, returning it and its length in bytes.
fn leading_json(text: &str) -> Option<(Value, usize)> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = stream.next()?.ok()?;
    Some((value, stream.byte_offset()))
}

fn openai_call(rest: &str, tags: &TagSet) -> Option<(usize, RawElement)> {
    let inner = rest.strip_prefix('{')?.trim_start();
    if !inner.starts_with("\"name\"") {
        return None;
    }
    let (value, length) = leading_json(rest)?;
    Some((length, call_from_json(&value, tags)?))
}

fn mistral_calls(rest: &str, tags: &TagSet) -> Option<(usize, Vec<RawElement>)> {
    let after = rest.strip_prefix(MISTRAL_MARKER)?;
    let json = after.trim_start();
    let skipped = after.len() - json.len();
    let (value, length) = leading_json(json)?;
    let calls = match &value {
        Value::Array(items) => items
            .iter()
            .map(|item| call_from_json(item, tags))
            .collect::<Option<Vec<_>>>()?,
        object @ Value::Object(_) => vec![call_from_json(object, tags)?],
        _ => return None,
    };
    Some((MISTRAL_MARKER.len() + skipped + length, calls))
}

fn anthropic_call(rest: &str, tags: &TagSet) -> Option<(usize, Vec<RawElement>)> {
    let after = rest.strip_prefix("<tool_use>")?.trim_start();
    let after = after.strip_prefix("<name>")?;
    // A tool's name is short: its end is looked for nearby, so a flood of unclosed calls
    // costs each its own few bytes, not the rest of the reply.
    let span = (0..=after.len().min(NAME_SPAN + NAME_CLOSE.len()))
        .rev()
        .find(|end| after.is_char_boundary(*end))
        .unwrap_or_default();
    let near = after.get(..span)?;
    let name_end = near.find(NAME_CLOSE)?;
    let name = after.get(..name_end)?.trim();
    let after = after.get(name_end + NAME_CLOSE.len()..)?.trim_start();
    let after = after.strip_prefix("<input>")?;
    let json = after.trim_start();
    let (value, length) = leading_json(json)?;
    let after = json.get(length..)?.trim_start().strip_prefix("</input>")?;
    let after = after.trim_start().strip_prefix("</tool_use>")?;
    let tool = tool_from_call_name(name, tags)?;
    let element = element_from_arguments(tool, json_arguments(&value));
    Some((rest.len() - after.len(), vec![element]))
}

fn qwen_call(rest: &str, tags: &TagSet) -> Option<(usize, Vec<RawElement>)> {
    // Calls do not nest: one never reaches past the next opening token (which may also close
    // it), so a run of broken calls is scanned once, not once per call; and that token is
    // looked for only behind an opening one, not behind every `<` of the text.
    let opened = rest.strip_prefix(QWEN_OPEN)?;
    let next_open = opened
        .find(QWEN_OPEN)
        .map_or(rest.len(), |offset| 2 * QWEN_OPEN.len() + offset);
    let rest = rest.get(..next_open)?;
    let after = rest.strip_prefix(QWEN_OPEN)?.trim_start();
    let after = after.strip_prefix("call:").unwrap_or(after);
    let name_end = after.find('{')?;
    let name = after.get(..name_end)?.trim();
    if name.is_empty()
        || !name.bytes().all(|byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b':' | b'/' | b'-')
        })
    {
        return None;
    }
    let tool = tool_from_call_name(name, tags)?;
    let (arguments, after) = qwen_params(after.get(name_end + 1..)?)?;
    let trimmed = after.trim_start();
    let after = trimmed
        .strip_prefix(QWEN_CLOSE)
        .or_else(|| trimmed.strip_prefix(QWEN_OPEN))
        .unwrap_or(after);
    let element = element_from_arguments(tool, arguments);
    Some((rest.len() - after.len(), vec![element]))
}

/// Parses `k:"v", k2:'v2', k3:v3, k4:<|"|>v4<|"|>}` up to and including the closing brace,
/// returning the pairs and the text after the brace.
fn qwen_params(mut rest: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut pairs = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if let Some(after) = rest.strip_prefix('}') {
            return Some((pairs, after));
        }
        let key_end = rest.find([':', '=', '}'])?;
        let key = rest.get(..key_end)?.trim().trim_matches(['"', '\'']);
        rest = rest.get(key_end..)?;
        rest = rest
            .strip_prefix(':')
            .or_else(|| rest.strip_prefix('='))?
            .trim_start();
        let (value, after) = qwen_value(rest)?;
        if !key.is_empty() {
            pairs.push((key.to_owned(), value));
        }
        rest = after;
    }
}

fn qwen_value(rest: &str) -> Option<(String, &str)> {
    if let Some(after) = rest.strip_prefix(GEMMA_QUOTE) {
        let end = after.find(GEMMA_QUOTE)?;
        return Some((
            after.get(..end)?.to_owned(),
            after.get(end + GEMMA_QUOTE.len()..)?,
        ));
    }
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, quote @ ('"' | '\''))) => {
            let mut value = String::new();
            let mut escaped = false;
            for (index, character) in chars {
                if escaped {
                    if character != quote && character != '\\' {
                        value.push('\\');
                    }
                    value.push(character);
                    escaped = false;
                } else if character == '\\' {
                    escaped = true;
                } else if character == quote {
                    return Some((value, rest.get(index + character.len_utf8()..)?));
                } else {
                    value.push(character);
                }
            }
            None
        }
        _ => {
            let end = rest.find([',', '}'])?;
            Some((rest.get(..end)?.trim().to_owned(), rest.get(end..)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::tags::{bundled, bundled_tag};

    fn expand_one(text: &str) -> Vec<Piece> {
        expand(vec![Piece::Text(text.to_owned())], &bundled())
    }

    fn element(tool: &str, attrs: &[(&str, &str)], body: &str) -> Piece {
        Piece::Element(RawElement {
            tool: bundled_tag(tool),
            attrs: attrs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body: body.to_owned(),
            closed: true,
        })
    }

    #[test]
    fn qwen_call_with_namespace_and_mixed_quotes() {
        assert_eq!(
            expand_one("<|tool_call>call:rummy.nvim/get{path:\"it's\"}<tool_call|> ok"),
            vec![
                element("get", &[("path", "it's")], ""),
                Piece::Text(" ok".into())
            ]
        );
    }

    #[test]
    fn qwen_gemma_quote_and_unquoted_values() {
        assert_eq!(
            expand_one("<|tool_call>call:sh{command:<|\"|>ls, -la<|\"|>,cwd:/}<tool_call|>"),
            vec![element("sh", &[("command", "ls, -la"), ("cwd", "/")], "")]
        );
    }

    #[test]
    fn a_call_after_many_lone_angle_brackets_is_found() {
        let text = format!(
            "{} <|tool_call>call:get{{path:\"a\"}}<tool_call|>",
            "<".repeat(64)
        );
        assert_eq!(
            expand_one(&text),
            vec![
                Piece::Text(format!("{} ", "<".repeat(64))),
                element("get", &[("path", "a")], "")
            ]
        );
    }

    #[test]
    fn an_anthropic_name_ends_within_its_span() {
        let call = |name: &str| {
            format!("<tool_use><name>{name}</name><input>{{\"path\":\"a\"}}</input></tool_use>")
        };
        let padded = format!("{}get", " ".repeat(NAME_SPAN - "get".len()));
        assert_eq!(
            expand_one(&call(&padded)),
            vec![element("get", &[("path", "a")], "")]
        );
        let too_long = format!(" {padded}");
        assert_eq!(
            expand_one(&call(&too_long)),
            vec![Piece::Text(call(&too_long))]
        );
    }

    #[test]
    fn unknown_native_tool_stays_text() {
        let text = "<|tool_call>call:fake{a:\"b\"}<tool_call|>";
        assert_eq!(expand_one(text), vec![Piece::Text(text.into())]);
    }

    #[test]
    fn openai_arguments_may_be_a_json_string() {
        assert_eq!(
            expand_one(r#"{"name":"get","arguments":"{\"path\":\"a\"}"}"#),
            vec![element("get", &[("path", "a")], "")]
        );
    }

    #[test]
    fn search_query_fills_the_main_field() {
        assert_eq!(
            expand_one(r#"{"name":"search","arguments":{"query":"q","results":3}}"#),
            vec![element("search", &[("results", "3")], "q")]
        );
    }

    #[test]
    fn mistral_wrapper_is_consumed() {
        assert_eq!(
            expand_one("x [TOOL_CALLS] [{\"name\":\"rm\",\"arguments\":{\"path\":\"a\"}}] y"),
            vec![
                Piece::Text("x ".into()),
                element("rm", &[("path", "a")], ""),
                Piece::Text(" y".into())
            ]
        );
    }

    #[test]
    fn tool_fences_are_dropped_and_other_fences_kept() {
        assert_eq!(
            expand(
                vec![
                    Piece::Text("```xml\r\n".into()),
                    Piece::Text("\n```\n```js\nx\n```".into())
                ],
                &bundled()
            ),
            vec![
                Piece::Text("\n".into()),
                Piece::Text("\n```js\nx\n```".into())
            ]
        );
    }
}
