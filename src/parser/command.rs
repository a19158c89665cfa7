//! Typed commands, one shape per tool, and their JSON view.
//!
//! The JSON view ([`Command::to_json`]) is the shape the hedberg vectors use: keys the
//! reference leaves undefined are absent, keys it sets to null are `null`.

use serde_json::{json, Map, Value};

use super::attrs::ExtraAttrs;
use super::attrs::{extend_attrs, insert_some};
use super::set::SetCommand;
use super::tags::TypedTag;

/// `<get>` and `<rm>`: entries selected by path or pattern.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// Path or pattern: the `path` attribute, else the body text.
    pub path: Option<String>,
    /// Content filter: the `body` attribute, else the body text when `path` was an attribute.
    pub filter: Option<String>,
    /// List matches without loading (get) or deleting (rm).
    pub preview: bool,
}

/// `<get>`: load entries, optionally a line range or at a fidelity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetCommand {
    /// What to load and how.
    pub selection: Selection,
    /// First line of a partial read, 1-based.
    pub line: Option<u64>,
    /// Number of lines of a partial read.
    pub limit: Option<u64>,
    /// Fidelity to set on the matches.
    pub fidelity: Option<String>,
}

/// `<cp>` and `<mv>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransferCommand {
    /// Source path or pattern.
    pub path: Option<String>,
    /// Destination: the `to` attribute, else the body text.
    pub to: Option<String>,
    /// Fidelity for the destination.
    pub fidelity: Option<String>,
    /// List what would move without moving it.
    pub preview: bool,
}

/// `<search>`: an external web search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchCommand {
    /// The query: the `path` attribute (or a healed `query=`), else the body text.
    pub query: Option<String>,
    /// Number of results wanted; `None` when absent or not a number.
    pub results: Option<u64>,
}

/// `<ask_user>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AskUserCommand {
    /// The question attribute.
    pub question: Option<String>,
    /// The options: attribute, else the body text (split by the handler).
    pub options: Option<String>,
}

/// `<known>`: a fact.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KnownCommand {
    /// Target path; `None` lets the recorder derive a slug.
    pub path: Option<String>,
    /// Body text, else the `body` attribute, else empty.
    pub body: String,
    /// Every other attribute (`summary` …).
    pub attributes: ExtraAttrs,
}

/// `<unknown>`: an open question.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnknownCommand {
    /// Explicit path, when given.
    pub path: Option<String>,
    /// The question.
    pub body: String,
}

/// A tag's text and attributes: `<think>`, and any tag without a typed command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaggedText {
    /// Body text (verbatim, trimmed), else the `body` attribute.
    pub body: String,
    /// Every attribute but `body`.
    pub attributes: ExtraAttrs,
}

/// One command parsed from model output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Get(GetCommand),
    Set(SetCommand),
    Known(KnownCommand),
    Unknown(UnknownCommand),
    /// `<env>`: the command line, when one was given.
    Env(Option<String>),
    /// `<sh>`: the command line, when one was given.
    Sh(Option<String>),
    Rm(Selection),
    Cp(TransferCommand),
    Mv(TransferCommand),
    Search(SearchCommand),
    /// `<summarize>`: the final answer.
    Summarize(String),
    /// `<update>`: a progress note.
    Update(String),
    /// `<ask_user>`.
    AskUser(AskUserCommand),
    /// `<think>`: reasoning, never executed.
    Think(TaggedText),
    /// A registered tag without a typed command, kept with its attributes; its tool turns
    /// it into its own input.
    Other {
        name: String,
        /// Body and attributes.
        content: TaggedText,
    },
}

impl Command {
    /// The tool name as written in the tag.
    pub fn name(&self) -> &str {
        match self {
            Command::Get(_) => TypedTag::Get.name(),
            Command::Set(_) => TypedTag::Set.name(),
            Command::Known(_) => TypedTag::Known.name(),
            Command::Unknown(_) => TypedTag::Unknown.name(),
            Command::Env(_) => TypedTag::Env.name(),
            Command::Sh(_) => TypedTag::Sh.name(),
            Command::Rm(_) => TypedTag::Rm.name(),
            Command::Cp(_) => TypedTag::Cp.name(),
            Command::Mv(_) => TypedTag::Mv.name(),
            Command::Search(_) => TypedTag::Search.name(),
            Command::Summarize(_) => TypedTag::Summarize.name(),
            Command::Update(_) => TypedTag::Update.name(),
            Command::AskUser(_) => TypedTag::AskUser.name(),
            Command::Think(_) => TypedTag::Think.name(),
            Command::Other { name, .. } => name,
        }
    }

    /// The path pattern and body filter of a command that selects entries by their content
    /// (`get`, `rm`, `set` with a body filter), so that search can be evaluated beside the
    /// writer before the command runs.
    pub fn body_search(&self) -> Option<(&str, &str)> {
        let (path, filter) = match self {
            Command::Get(get) => (&get.selection.path, &get.selection.filter),
            Command::Rm(selection) => (&selection.path, &selection.filter),
            Command::Set(set) => (&set.path, &set.filter),
            _ => return None,
        };
        Some((
            path.as_deref()?,
            filter.as_deref().filter(|filter| !filter.is_empty())?,
        ))
    }

    /// The command as a JSON object in the vectors' shape (`name` plus the tool's fields).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), json!(self.name()));
        match self {
            Command::Get(get) => {
                selection_json(&get.selection, &mut object);
                insert_some(&mut object, "line", get.line.map(Value::from));
                insert_some(&mut object, "limit", get.limit.map(Value::from));
                insert_some(
                    &mut object,
                    "fidelity",
                    get.fidelity.as_deref().map(Value::from),
                );
            }
            Command::Rm(selection) => selection_json(selection, &mut object),
            Command::Set(set) => set.write_json(&mut object),
            Command::Known(known) => {
                extend_attrs(&mut object, &known.attributes);
                object.insert("path".into(), json!(known.path));
                object.insert("body".into(), json!(known.body));
            }
            Command::Unknown(unknown) => {
                insert_some(
                    &mut object,
                    "path",
                    unknown.path.as_deref().map(Value::from),
                );
                object.insert("body".into(), json!(unknown.body));
            }
            Command::Env(command) | Command::Sh(command) => {
                object.insert("command".into(), json!(command));
            }
            Command::Cp(transfer) | Command::Mv(transfer) => {
                object.insert("path".into(), json!(transfer.path));
                object.insert("to".into(), json!(transfer.to));
                insert_some(
                    &mut object,
                    "fidelity",
                    transfer.fidelity.as_deref().map(Value::from),
                );
                if transfer.preview {
                    object.insert("preview".into(), json!(true));
                }
            }
            Command::Search(search) => {
                object.insert("path".into(), json!(search.query));
                object.insert("results".into(), json!(search.results));
            }
            Command::Summarize(body) | Command::Update(body) => {
                object.insert("body".into(), json!(body));
            }
            Command::AskUser(ask) => {
                object.insert("question".into(), json!(ask.question));
                object.insert("options".into(), json!(ask.options));
            }
            Command::Think(content) | Command::Other { content, .. } => {
                extend_attrs(&mut object, &content.attributes);
                object.insert("body".into(), json!(content.body));
            }
        }
        Value::Object(object)
    }
}

fn selection_json(selection: &Selection, object: &mut Map<String, Value>) {
    object.insert("path".into(), json!(selection.path));
    insert_some(object, "body", selection.filter.as_deref().map(Value::from));
    if selection.preview {
        object.insert("preview".into(), json!(true));
    }
}
