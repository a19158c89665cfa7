//! Finalising one tool element into its command (SEMANTICS §4.4, AGENT.md A.5).
//!
//! Attributes are healed first; "text" below is the verbatim body, trimmed. Each typed tag
//! fills its main field from an attribute first and from the text otherwise, and keeps every
//! attribute its documentation teaches; any other tag keeps its text (else its `body`
//! attribute) and every other attribute.

use super::attrs::{normalize_attrs, Attrs};
use super::command::{
    AskUserCommand, Command, GetCommand, KnownCommand, SearchCommand, Selection, TaggedText,
    TransferCommand, UnknownCommand,
};
use super::scan::RawElement;
use super::set::SetCommand;
use super::tags::TypedTag;

/// Turns one raw element into its command.
pub(crate) fn resolve(element: RawElement) -> Command {
    let attrs = normalize_attrs(element.attrs);
    let trimmed = super::trim(&element.body);
    let text = Some(trimmed).filter(|text| !text.is_empty());
    let owned = |value: Option<&str>| value.map(str::to_owned);
    let text_or_body = || owned(text.or(attrs.text("body"))).unwrap_or_default();
    let Some(typed) = element.tool.typed else {
        return Command::Other {
            name: element.tool.name.to_owned(),
            content: tagged_text(&attrs, text),
        };
    };
    match typed {
        TypedTag::Get => Command::Get(GetCommand {
            selection: selection(&attrs, text, element.closed),
            line: number(&attrs, "line"),
            limit: number(&attrs, "limit"),
            fidelity: owned(attrs.text("fidelity")),
        }),
        TypedTag::Rm => Command::Rm(selection(&attrs, text, element.closed)),
        TypedTag::Set => Command::Set(SetCommand::resolve(&attrs, &element.body)),
        TypedTag::Known => Command::Known(KnownCommand {
            path: owned(attrs.text("path")),
            body: text_or_body(),
            attributes: attrs.without(&["path", "body"]),
        }),
        TypedTag::Unknown => Command::Unknown(UnknownCommand {
            path: owned(attrs.text("path")),
            body: text_or_body(),
        }),
        TypedTag::Env => Command::Env(owned(attrs.text("command").or(text))),
        TypedTag::Sh => Command::Sh(owned(attrs.text("command").or(text))),
        TypedTag::Cp => Command::Cp(transfer(&attrs, text)),
        TypedTag::Mv => Command::Mv(transfer(&attrs, text)),
        TypedTag::Search => Command::Search(SearchCommand {
            query: owned(attrs.text("path").or(text)),
            results: number(&attrs, "results"),
        }),
        TypedTag::Summarize => Command::Summarize(text_or_body()),
        TypedTag::Update => Command::Update(text_or_body()),
        TypedTag::AskUser => Command::AskUser(AskUserCommand {
            question: owned(attrs.text("question")),
            options: owned(attrs.text("options").or(text)),
        }),
        TypedTag::Think => Command::Think(tagged_text(&attrs, text)),
    }
}

/// Path from the attribute, else the text. With a path attribute, the text of a properly
/// closed element is the content filter (`<get path="known://*">auth</get>`), unless a `body`
/// attribute already is; the text after an unclosed `<get path="a">` is prose, not a filter.
fn selection(attrs: &Attrs, text: Option<&str>, closed: bool) -> Selection {
    let path_attr = attrs.text("path");
    let filter = attrs
        .text("body")
        .or(text.filter(|_| path_attr.is_some() && closed));
    Selection {
        path: path_attr.or(text).map(str::to_owned),
        filter: filter.map(str::to_owned),
        preview: attrs.has("preview"),
    }
}

fn transfer(attrs: &Attrs, text: Option<&str>) -> TransferCommand {
    TransferCommand {
        path: attrs.text("path").map(str::to_owned),
        to: attrs.text("to").or(text).map(str::to_owned),
        fidelity: attrs.text("fidelity").map(str::to_owned),
        preview: attrs.has("preview"),
    }
}

fn tagged_text(attrs: &Attrs, text: Option<&str>) -> TaggedText {
    TaggedText {
        body: text.or(attrs.text("body")).unwrap_or_default().to_owned(),
        attributes: attrs.without(&["body"]),
    }
}

/// A non-negative whole number attribute; anything else is absent.
fn number(attrs: &Attrs, name: &str) -> Option<u64> {
    attrs.text(name)?.trim().parse().ok()
}
