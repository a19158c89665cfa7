//! What a projection sees of one entry.

use serde_json::{Map, Value};

use crate::db::enums::{Category, EntryStatus, Fidelity};

/// One visible entry, as a view function or an assembly plugin reads it.
#[derive(Debug, Clone, Copy)]
pub struct EntryView<'a> {
    /// Normalized entry path (`known://x`, `src/app.js`, `get://turn_3/src/a.js`).
    pub path: &'a str,
    /// The scheme, or `None` for a bare file path.
    pub scheme: Option<&'a str>,
    pub status: EntryStatus,
    /// The fidelity the model sees it at (never `Archive` here).
    pub fidelity: Fidelity,
    /// The section it renders in.
    pub category: Category,
    /// The raw body (already `""` at index fidelity).
    pub body: &'a str,
    pub attributes: &'a Map<String, Value>,
    /// Turn of the entry's last touch.
    pub turn: i64,
}

impl EntryView<'_> {
    /// A string attribute, when present.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).and_then(Value::as_str)
    }

    /// The scheme name used to find its plugin: `file` for bare paths.
    pub fn plugin_scheme(&self) -> &str {
        self.scheme.unwrap_or("file")
    }
}
