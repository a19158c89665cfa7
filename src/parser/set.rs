//! The `<set>` command and its decision ladder (SEMANTICS §4.4): structured edit blocks,
//! a JSON edit, sed, a `search` attribute, a `body` attribute used as the search, and
//! finally a plain write. The first rule that applies wins.

use serde_json::{json, Map, Value};

use super::attrs::Attrs;
use super::command::{extend_attrs, insert_some, ExtraAttrs};
use crate::hedberg::{parse_edit_content, parse_json_edit, parse_sed, EditBlock};

fn block_json(block: &EditBlock, object: &mut Map<String, Value>) {
    object.insert("search".into(), json!(block.search));
    object.insert("replace".into(), json!(block.replace));
    if !block.flags.is_empty() {
        object.insert("flags".into(), json!(block.flags));
    }
    if block.sed {
        object.insert("sed".into(), json!(true));
    }
}

/// What a `<set>` does to its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetOperation {
    /// Apply these blocks in order (SEARCH/REPLACE, diff hunks, chained sed …).
    Blocks(Vec<EditBlock>),
    /// Apply one search/replace.
    Replace(EditBlock),
    /// Write this full content (or, when empty, only change fidelity/summary).
    Write(String),
}

/// `<set>`: write, edit, or change the fidelity of entries and files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetCommand {
    /// Target path or pattern.
    pub path: Option<String>,
    /// Content filter narrowing which entries a pattern edits (`body` attribute).
    pub filter: Option<String>,
    /// List the targets instead of writing.
    pub preview: bool,
    /// Fidelity to set on the targets.
    pub fidelity: Option<String>,
    /// The edit or write.
    pub operation: SetOperation,
    /// Every other attribute (`summary`, `filter` …).
    pub attributes: ExtraAttrs,
}

impl SetCommand {
    /// Resolves a `<set>` from its healed attributes and raw (untrimmed) body.
    pub(crate) fn resolve(attrs: &Attrs, raw_body: &str) -> SetCommand {
        let trimmed = super::trim(raw_body);
        let body_attr = attrs.text("body").map(str::to_owned);
        let mut command = SetCommand {
            path: attrs.text("path").map(str::to_owned),
            filter: body_attr.clone(),
            preview: attrs.has("preview"),
            fidelity: attrs.text("fidelity").map(str::to_owned),
            operation: SetOperation::Write(String::new()),
            attributes: attrs.without(&["path", "body", "preview", "fidelity"]),
        };

        let blocks = parse_edit_content(raw_body);
        if !blocks.is_empty() {
            command.operation = SetOperation::Blocks(blocks);
            return command;
        }
        if let Some(edit) = parse_json_edit(trimmed) {
            command.operation =
                SetOperation::Replace(EditBlock::literal(edit.search, edit.replace));
            return command;
        }
        let mut sed_blocks = parse_sed(trimmed);
        if sed_blocks.len() > 1 {
            command.operation = SetOperation::Blocks(sed_blocks);
            return command;
        }
        if let Some(block) = sed_blocks.pop() {
            command.operation = SetOperation::Replace(block);
            return command;
        }
        if let Some(search) = attrs.text("search") {
            let replace = attrs
                .raw_text("replace")
                .map_or_else(|| trimmed.to_owned(), str::to_owned);
            command.operation = SetOperation::Replace(EditBlock::literal(search, replace));
            return command;
        }
        if let Some(search) = body_attr.filter(|_| !trimmed.is_empty()) {
            command.filter = None;
            command.operation = SetOperation::Replace(EditBlock::literal(search, trimmed));
            return command;
        }
        let body = if trimmed.is_empty() {
            command.filter.take().unwrap_or_default()
        } else {
            trimmed.to_owned()
        };
        command.operation = SetOperation::Write(body);
        command
    }

    /// Writes the command's fields into `object` in the vectors' shape.
    pub(crate) fn write_json(&self, object: &mut Map<String, Value>) {
        insert_some(object, "path", self.path.as_deref().map(Value::from));
        if self.preview {
            object.insert("preview".into(), json!(true));
        }
        insert_some(
            object,
            "fidelity",
            self.fidelity.as_deref().map(Value::from),
        );
        match &self.operation {
            SetOperation::Blocks(blocks) => {
                insert_some(object, "body", self.filter.as_deref().map(Value::from));
                let blocks = blocks
                    .iter()
                    .map(|block| {
                        let mut entry = Map::new();
                        block_json(block, &mut entry);
                        Value::Object(entry)
                    })
                    .collect::<Vec<_>>();
                object.insert("blocks".into(), Value::Array(blocks));
            }
            SetOperation::Replace(block) => {
                insert_some(object, "body", self.filter.as_deref().map(Value::from));
                block_json(block, object);
            }
            SetOperation::Write(body) => {
                extend_attrs(object, &self.attributes);
                object.insert("body".into(), json!(body));
            }
        }
    }
}
