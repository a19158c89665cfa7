//! The tolerant parser that turns model output into commands, and the response healer.
//!
//! [`parse`] never fails and never panics: unclosed tags, unquoted attributes, missing
//! self-closing slashes, code fences and foreign tool-call formats are healed, with a
//! warning where something was recovered. Tool bodies are kept verbatim (no entity
//! decoding, no tag rewriting), and tags inside a closed `<think>` are never executed.
//! The healer ([`healer`]) decides what a turn without a status means and when a run stops.

mod attrs;
mod command;
mod foreign;
pub(crate) mod healer;
mod resolve;
mod scan;
mod set;
mod tag;
mod tags;

#[cfg(test)]
mod vector_tests;

pub(crate) use attrs::{normalize_attrs, AttrValue, ExtraAttrs};
pub(crate) use command::{
    AskUserCommand, GetCommand, KnownCommand, SearchCommand, Selection, TransferCommand,
    UnknownCommand,
};
pub use command::{Command, TaggedText};
pub(crate) use set::SetCommand;
pub(crate) use tags::TagSet;
pub use tags::TagSpec;

/// Everything parsed from one model response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ParseOutput {
    /// Commands in response order.
    pub commands: Vec<Command>,
    /// What was recovered (unclosed tags, repaired attributes …), for the model to see.
    pub warnings: Vec<String>,
    /// Text outside any command, concatenated and trimmed at both ends.
    pub unparsed: String,
}

/// Parses a complete model response into commands, recognising the tags of `tags`.
pub(crate) fn parse(content: &str, tags: &TagSet) -> ParseOutput {
    let mut output = ParseOutput::default();
    let mut unparsed = String::new();
    for piece in foreign::expand(scan::scan(content, tags, &mut output.warnings), tags) {
        match piece {
            scan::Piece::Text(text) => unparsed.push_str(&text),
            scan::Piece::Element(element) => output.commands.push(resolve::resolve(element)),
        }
    }
    output.unparsed = trim(&unparsed).to_owned();
    output
}

/// Trims whitespace the way the reference does (Unicode white space plus the BOM).
pub(crate) fn trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::parser::tags::bundled;

    fn parse_bundled(content: &str) -> ParseOutput {
        parse(content, &bundled())
    }

    fn commands_json(content: &str) -> Vec<serde_json::Value> {
        parse_bundled(content)
            .commands
            .iter()
            .map(Command::to_json)
            .collect()
    }

    #[test]
    fn closed_think_is_reasoning_only() {
        let output =
            parse_bundled("<think>I should <get path=\"a\"/> first</think>\n<update>ok</update>");
        assert_eq!(
            output.commands,
            vec![
                Command::Think(TaggedText {
                    body: "I should <get path=\"a\"/> first".into(),
                    attributes: Vec::new(),
                }),
                Command::Update("ok".into()),
            ]
        );
        assert!(output.warnings.is_empty());
    }

    #[test]
    fn get_keeps_partial_read_fidelity_and_text_filter() {
        let output = parse_bundled(
            "<get path=\"src/a.rs\" line=\"10\" limit=\"5\" fidelity=\"full\"/>\
             <get path=\"known://*\">auth</get>",
        );
        assert_eq!(
            output.commands,
            vec![
                Command::Get(GetCommand {
                    selection: Selection {
                        path: Some("src/a.rs".into()),
                        ..Selection::default()
                    },
                    line: Some(10),
                    limit: Some(5),
                    fidelity: Some("full".into()),
                }),
                Command::Get(GetCommand {
                    selection: Selection {
                        path: Some("known://*".into()),
                        filter: Some("auth".into()),
                        preview: false,
                    },
                    ..GetCommand::default()
                }),
            ]
        );
    }

    #[test]
    fn unknown_path_rm_preview_and_mv_fidelity_are_kept() {
        assert_eq!(
            commands_json(
                "<unknown path=\"unknown://db\">which db?</unknown>\
                 <rm path=\"src/*.tmp\" preview/>\
                 <mv path=\"known://a\" to=\"known://b\" fidelity=\"archive\"/>"
            ),
            vec![
                json!({"name": "unknown", "path": "unknown://db", "body": "which db?"}),
                json!({"name": "rm", "path": "src/*.tmp", "preview": true}),
                json!({"name": "mv", "path": "known://a", "to": "known://b", "fidelity": "archive"}),
            ]
        );
    }

    #[test]
    fn set_edit_forms_are_typed() {
        let output = parse_bundled(
            "<set path=\"a\">s|x|y|g</set>\
             <set path=\"b\" search=\"old\"/>\
             <set path=\"known://c\" fidelity=\"summary\" summary=\"k1,k2\"/>",
        );
        let operations: Vec<&crate::hedberg::SetRevision> = output
            .commands
            .iter()
            .filter_map(|command| match command {
                Command::Set(set) => Some(&set.operation),
                _ => None,
            })
            .collect();
        assert_eq!(
            operations,
            vec![
                &crate::hedberg::SetRevision::Replace(crate::hedberg::EditBlock::sed(
                    "x", "y", "g"
                )),
                &crate::hedberg::SetRevision::Replace(crate::hedberg::EditBlock::literal(
                    "old", ""
                )),
                &crate::hedberg::SetRevision::Write(String::new()),
            ]
        );
        assert_eq!(
            output.commands.last().map(Command::to_json),
            Some(json!({
                "name": "set", "path": "known://c", "fidelity": "summary",
                "summary": "k1,k2", "body": ""
            }))
        );
    }

    #[test]
    fn foreign_calls_interleave_with_tags_in_order() {
        let output = parse_bundled(
            "<get path=\"a\"/> then {\"name\":\"sh\",\"arguments\":{\"command\":\"make\"}} \
             <|tool_call>call:ask_user{question:'Go?',options:\"yes;no\"}<tool_call|>",
        );
        assert_eq!(
            output
                .commands
                .iter()
                .map(Command::name)
                .collect::<Vec<_>>(),
            vec!["get", "sh", "ask_user"]
        );
        assert_eq!(
            output.commands.get(1),
            Some(&Command::Sh(Some("make".into())))
        );
        assert_eq!(
            output.commands.get(2),
            Some(&Command::AskUser(AskUserCommand {
                question: Some("Go?".into()),
                options: Some("yes;no".into()),
            }))
        );
        assert_eq!(output.unparsed, "then");
    }

    #[test]
    fn foreign_call_text_inside_a_body_stays_verbatim() {
        let body = "```xml\n{\"name\":\"get\",\"arguments\":{\"path\":\"a\"}}\n```";
        let output = parse_bundled(&format!("<known path=\"known://fixture\">{body}</known>"));
        assert_eq!(
            output.commands,
            vec![Command::Known(KnownCommand {
                path: Some("known://fixture".into()),
                body: body.into(),
                attributes: Vec::new(),
            })]
        );
    }

    #[test]
    fn prose_after_an_unclosed_get_is_not_a_filter() {
        let output = parse_bundled("<get path=\"a.js\">\nI will read it first.");
        assert_eq!(
            output.commands,
            vec![Command::Get(GetCommand {
                selection: Selection {
                    path: Some("a.js".into()),
                    ..Selection::default()
                },
                ..GetCommand::default()
            })]
        );
        assert_eq!(output.warnings.len(), 1);
    }

    #[test]
    fn half_written_tag_at_the_end_is_not_a_command() {
        let output = parse_bundled("<update>x</update><set path=\"a.js\" sear");
        assert_eq!(output.commands, vec![Command::Update("x".into())]);
        assert_eq!(output.unparsed, "<set path=\"a.js\" sear");
    }

    #[test]
    fn a_declared_tag_without_a_typed_command_parses_generically() {
        let tags: TagSet = [("echo", TagSpec::BODY)].into_iter().collect();
        let output = parse(
            "<ECHO loud>hi <get path=\"a\"/></echo> <get path=\"b\"/>\
             {\"name\":\"echo\",\"arguments\":{\"text\":\"yo\"}}",
            &tags,
        );
        let echo = |body: &str, attributes: ExtraAttrs| Command::Other {
            name: "echo".into(),
            content: TaggedText {
                body: body.into(),
                attributes,
            },
        };
        assert_eq!(
            output.commands,
            vec![
                echo(
                    "hi <get path=\"a\"/>",
                    vec![("loud".into(), AttrValue::Text(String::new()))]
                ),
                echo("yo", Vec::new()),
            ]
        );
        assert_eq!(
            output.unparsed, "<get path=\"b\"/>",
            "undeclared tags are text"
        );
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("<get path=\"a\"/>".to_owned()),
            Just("<set path=".to_owned()),
            Just("</set>".to_owned()),
            Just("<think>".to_owned()),
            Just("</think".to_owned()),
            Just("<sh>".to_owned()),
            Just("\"".to_owned()),
            Just("'".to_owned()),
            Just(">".to_owned()),
            Just("/>".to_owned()),
            Just("<".to_owned()),
            Just("<<<<<<< SEARCH\n".to_owned()),
            Just("=======\n".to_owned()),
            Just(">>>>>>> REPLACE".to_owned()),
            Just("s/a/b/".to_owned()),
            Just("```xml\n".to_owned()),
            Just("```".to_owned()),
            Just("<|tool_call>call:get{path:".to_owned()),
            Just("<tool_call|>".to_owned()),
            Just("{\"name\":\"get\",\"arguments\":{\"path\":".to_owned()),
            Just("[TOOL_CALLS] [".to_owned()),
            Just("<tool_use><name>rm</name><input>".to_owned()),
            any::<char>().prop_map(String::from),
            "[ a-z=\n\r\t]{0,8}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_input_parses_without_panicking(parts in prop::collection::vec(fragment(), 0..48)) {
            let content = parts.concat();
            let output = parse_bundled(&content);
            prop_assert_eq!(trim(&output.unparsed), output.unparsed.as_str());
            for command in &output.commands {
                prop_assert!(command.to_json().get("name").is_some());
            }
            let _ = healer::heal_status(&content, output.commands.iter().map(Command::name), |_| true);
        }
    }

    #[test]
    fn runs_of_broken_tags_and_calls_stay_text() {
        let hostile = [
            "<get path=\"".repeat(3000),
            "<|tool_call>call:get{a:\"".repeat(3000),
            "{\"name\":\"get\",\"arguments\":{\"path\":".repeat(300),
        ]
        .concat();
        let output = parse_bundled(&hostile);
        assert_eq!(output.commands, Vec::new());
        assert_eq!(output.unparsed, hostile);
    }
}
