//! The model's words to the person as they stream in (`run/delta`), shown as
//! `agent_message_chunk`s as they come, and reconciled with the reply as recorded
//! (`run/state`), which is the authority.
//!
//! A turn's deltas are its raw reply; what the editor is shown of them is what the log will
//! show as the model's words: the bodies of its `<update>` and `<summarize>` tags, trimmed as
//! the parser trims them (whitespace at a body's end is held back until more follows; a
//! closing tag still coming is held back), and nothing inside `<think>`. A reply without
//! those tags (whose words the healer makes the summary) is shown when it is recorded.
//!
//! When the turn's words are recorded, each message entry is matched against what was
//! streamed of its turn: what was streamed is not sent again, what is missing (a stream
//! whose last pieces never came) is sent then; a recorded text that is not what streamed (a
//! stream the parser read otherwise) is sent whole, after a blank line, so that the editor's
//! message ends with the text as recorded (ACP cannot take back a chunk sent).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::parser::trim;

/// The tags whose bodies are the model's words to the person.
const MESSAGES: [&str; 2] = ["summarize", "update"];

/// The tag whose body is never shown (reasoning; tags inside it are not commands).
const THINK: &str = "think";

/// What streamed of each turn not yet recorded.
#[derive(Debug, Default)]
pub(super) struct Words {
    turns: BTreeMap<i64, Spoken>,
}

/// One turn's stream: its raw reply so far, the words shown of it, and how much of those
/// the recorded entries matched.
#[derive(Debug, Default)]
struct Spoken {
    raw: String,
    shown: String,
    matched: usize,
}

impl Words {
    /// What to show of a `run/delta` (its params): the words it adds, if any.
    pub(super) fn delta(&mut self, params: &Value) -> Option<String> {
        let turn = params.get("turn").and_then(Value::as_i64)?;
        let text = params.get("text").and_then(Value::as_str)?;
        let spoken = self.turns.entry(turn).or_default();
        spoken.raw.push_str(text);
        let said = said(&spoken.raw);
        let added = said.strip_prefix(spoken.shown.as_str())?;
        if added.is_empty() {
            return None;
        }
        let added = added.to_owned();
        spoken.shown.push_str(&added);
        Some(added)
    }

    /// What to show of a message entry of turn `turn` recorded with `body`: the part of it
    /// not streamed, or (when what streamed was not this text) all of it after a blank line.
    pub(super) fn recorded(&mut self, turn: i64, body: &str) -> Option<String> {
        let Some(spoken) = self.turns.get_mut(&turn) else {
            return Some(body.to_owned());
        };
        let unmatched = &spoken.shown[spoken.matched..];
        if unmatched.starts_with(body) {
            spoken.matched += body.len();
            return None;
        }
        let shown = match body.strip_prefix(unmatched) {
            Some(rest) => rest.to_owned(),
            None => format!("\n\n{body}"),
        };
        spoken.matched = spoken.shown.len();
        (!shown.is_empty()).then_some(shown)
    }

    /// Forgets the streams of the turns up to `turn`, whose words are recorded.
    pub(super) fn settled(&mut self, turn: i64) {
        self.turns = self.turns.split_off(&(turn + 1));
    }
}

/// The words to the person in `raw`, a reply so far, as far as they are sure.
fn said(raw: &str) -> String {
    let mut said = String::new();
    let mut rest = raw;
    while let Some((tag, body)) = next_open(rest) {
        let close = format!("</{tag}>");
        match body.find(&close) {
            Some(end) => {
                if tag != THINK {
                    said.push_str(trim(&body[..end]));
                }
                rest = &body[end + close.len()..];
            }
            None => {
                if tag != THINK {
                    let sure = body.trim_start_matches(is_space);
                    let sure = without_partial(sure, &close).trim_end_matches(is_space);
                    said.push_str(sure);
                }
                break;
            }
        }
    }
    said
}

fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// The next opening tag of a message or of `<think>` in `text` (its name, and what follows
/// it); `None` when there is none, or it is still coming.
fn next_open(text: &str) -> Option<(&'static str, &str)> {
    let mut from = 0;
    while let Some(at) = text[from..].find('<') {
        let tag_start = from + at + 1;
        let after = &text[tag_start..];
        let named = MESSAGES.iter().chain(std::iter::once(&THINK)).find(|name| {
            after.starts_with(*name)
                && after[name.len()..]
                    .chars()
                    .next()
                    .is_some_and(|next| next == '>' || next == '/' || next.is_whitespace())
        });
        if let Some(name) = named {
            let end = after.find('>')?;
            if after[..end].ends_with('/') {
                from = tag_start + end + 1;
                continue;
            }
            return Some((name, &after[end + 1..]));
        }
        from = tag_start;
    }
    None
}

/// `body` without a start of `close` at its end (a closing tag whose rest is still coming).
fn without_partial<'a>(body: &'a str, close: &str) -> &'a str {
    (1..close.len())
        .rev()
        .find(|length| body.ends_with(&close[..*length]))
        .map_or(body, |length| &body[..body.len() - length])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The words shown of `pieces` streamed as turn 3, one delta each.
    fn streamed(words: &mut Words, pieces: &[&str]) -> Vec<String> {
        pieces
            .iter()
            .filter_map(|text| {
                words.delta(&json!({"run": "r", "loop": 1, "turn": 3, "text": text}))
            })
            .collect()
    }

    #[test]
    fn the_bodies_of_updates_and_summaries_stream_trimmed_and_nothing_else() {
        let mut words = Words::default();
        let shown = streamed(
            &mut words,
            &[
                "<think>I will <summarize>no",
                "t this</summarize></think><get path=\"a\"/><upd",
                "ate>\n  Reading",
                " a.  ",
                "\n</upd",
                "ate><summarize body=\"x\"/><summarize>Done",
                ".</summarize> trailing",
            ],
        );
        assert_eq!(shown, ["Reading", " a.", "Done", "."]);
    }

    #[test]
    fn what_streamed_is_not_shown_again_and_what_is_missing_is() {
        let mut words = Words::default();
        streamed(&mut words, &["<update>Reading a.</update><summarize>Do"]);
        assert_eq!(words.recorded(3, "Reading a."), None);
        assert_eq!(words.recorded(3, "Done."), Some("ne.".to_owned()));
        assert_eq!(words.recorded(4, "Next."), Some("Next.".to_owned()));
    }

    #[test]
    fn a_recorded_text_other_than_what_streamed_is_shown_whole_after_a_blank_line() {
        let mut words = Words::default();
        streamed(&mut words, &["<summarize>half of"]);
        assert_eq!(
            words.recorded(3, "the whole answer"),
            Some("\n\nthe whole answer".to_owned())
        );
        words.settled(3);
        assert_eq!(words.recorded(3, "again"), Some("again".to_owned()));
    }

    #[test]
    fn a_partial_closing_tag_is_held_back() {
        assert_eq!(without_partial("abc</sum", "</summarize>"), "abc");
        assert_eq!(without_partial("abc<", "</summarize>"), "abc");
        assert_eq!(without_partial("a < b", "</summarize>"), "a < b");
        assert_eq!(said("<summarize>1 < 2 </summ"), "1 < 2");
    }
}
