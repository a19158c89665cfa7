//! The `<set>` command. Its decision ladder (SEMANTICS §4.4: structured edit blocks, a JSON
//! edit, sed, a `search` attribute, a `body` attribute used as the search, a plain write)
//! is hedberg's [`classify_set`].

use serde_json::{json, Map, Value};

use super::attrs::{extend_attrs, insert_some, Attrs, ExtraAttrs};
use crate::hedberg::{classify_set, EditBlock, SetAttributes, SetRevision};

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
    pub operation: SetRevision,
    /// Every other attribute (`summary`, `filter` …).
    pub attributes: ExtraAttrs,
}

impl SetCommand {
    /// Resolves a `<set>` from its healed attributes and raw (untrimmed) body.
    pub(crate) fn resolve(attrs: &Attrs, raw_body: &str) -> SetCommand {
        let body_attr = attrs.text("body").map(str::to_owned);
        let mut command = SetCommand {
            path: attrs.text("path").map(str::to_owned),
            filter: body_attr.clone(),
            preview: attrs.has("preview"),
            fidelity: attrs.text("fidelity").map(str::to_owned),
            operation: SetRevision::Write(String::new()),
            attributes: attrs.without(&["path", "body", "preview", "fidelity"]),
        };

        let classified = classify_set(
            &SetAttributes {
                search: attrs.text("search"),
                replace: attrs.raw_text("replace"),
                body: body_attr.as_deref(),
            },
            raw_body,
        );
        if classified.body_attribute_used {
            command.filter = None;
        }
        command.operation = classified.revision;
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
            SetRevision::Blocks(blocks) => {
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
            SetRevision::Replace(block) => {
                insert_some(object, "body", self.filter.as_deref().map(Value::from));
                block_json(block, object);
            }
            SetRevision::Write(body) => {
                extend_attrs(object, &self.attributes);
                object.insert("body".into(), json!(body));
            }
        }
    }
}
