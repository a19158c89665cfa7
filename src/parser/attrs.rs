//! Attribute healing: turns the attributes a model wrote on a tool tag into the canonical set.
//!
//! Models use legacy names (`file=`, `key=`, `value=`), write boolean attributes bare
//! (`preview`), and prefix paths with `file://`. [`normalize_attrs`] repairs all of that in
//! one pass; the order of the rules matters (SEMANTICS §3.4).

/// The value of one attribute after healing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    /// A value as the model wrote it (verbatim, no entity decoding).
    Text(String),
    /// A healed boolean attribute (`preview`, a bare `summary`).
    Flag,
}

/// Extra attributes kept as written (after healing), in source order.
pub(crate) type ExtraAttrs = Vec<(String, AttrValue)>;

/// Inserts `key` only when there is a value (the reference leaves it undefined otherwise).
pub(crate) fn insert_some(
    object: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
    value: Option<serde_json::Value>,
) {
    if let Some(value) = value {
        object.insert(key.into(), value);
    }
}

/// Adds each attribute under its own name, in its JSON form.
pub(crate) fn extend_attrs(
    object: &mut serde_json::Map<String, serde_json::Value>,
    attributes: &[(String, AttrValue)],
) {
    for (name, value) in attributes {
        object.insert(name.clone(), value.to_json());
    }
}

impl AttrValue {
    /// The text of the value, `None` for a flag.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Flag => None,
        }
    }

    /// The JSON form: a string, or `true` for a flag.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Text(text) => serde_json::Value::String(text.clone()),
            Self::Flag => serde_json::Value::Bool(true),
        }
    }
}

/// Healed attributes in source order, names unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attrs {
    entries: Vec<(String, AttrValue)>,
}

impl Attrs {
    /// The value of `name`, if present.
    pub(crate) fn get(&self, name: &str) -> Option<&AttrValue> {
        self.entries
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    /// The text of `name` when present and non-empty (JavaScript truthiness, which the
    /// per-tool rules are written in).
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.get(name)
            .and_then(AttrValue::as_text)
            .filter(|text| !text.is_empty())
    }

    /// The text of `name` when present, even when empty.
    pub(crate) fn raw_text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(AttrValue::as_text)
    }

    /// Whether `name` is present with any value.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every attribute in source order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.entries
            .iter()
            .map(|(key, value)| (key.as_str(), value))
    }

    /// Every attribute whose name is not in `excluded`, in source order.
    pub(crate) fn without(&self, excluded: &[&str]) -> Vec<(String, AttrValue)> {
        self.entries
            .iter()
            .filter(|(key, _)| !excluded.contains(&key.as_str()))
            .cloned()
            .collect()
    }

    fn remove(&mut self, name: &str) -> Option<AttrValue> {
        let index = self.entries.iter().position(|(key, _)| key == name)?;
        Some(self.entries.remove(index).1)
    }

    fn set(&mut self, name: &str, value: AttrValue) {
        match self.entries.iter_mut().find(|(key, _)| key == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name.to_owned(), value)),
        }
    }
}

/// Attribute names with a meaning of their own; they are never promoted to `path`.
/// `line` and `limit` are here too because `get` honours partial reads (AGENT.md A.5);
/// `transient` because it marks a `<remember>`'s fact.
const RESERVED: &[&str] = &[
    "path",
    "body",
    "preview",
    "question",
    "options",
    "search",
    "replace",
    "to",
    "results",
    "command",
    "warn",
    "summary",
    "fidelity",
    "line",
    "limit",
    "transient",
];

/// Heals raw `(name, value)` pairs in source order. Names are expected lower-cased; a
/// duplicate name keeps its first value.
pub(crate) fn normalize_attrs<N, V>(raw: impl IntoIterator<Item = (N, V)>) -> Attrs
where
    N: Into<String>,
    V: Into<String>,
{
    let mut attrs = Attrs::default();
    for (name, value) in raw {
        let name = name.into();
        if !attrs.has(&name) {
            attrs.entries.push((name, AttrValue::Text(value.into())));
        }
    }

    if !attrs.has("body") {
        if let Some(value) = attrs.remove("value") {
            attrs.set("body", value);
        }
    }

    if attrs.text("path").is_none() {
        let promoted = attrs.entries.iter().position(|(key, value)| {
            !RESERVED.contains(&key.as_str())
                && value.as_text().is_some_and(|text| !text.is_empty())
        });
        if let Some(index) = promoted {
            let (_, value) = attrs.entries.remove(index);
            attrs.set("path", value);
        }
    }

    if attrs.has("preview") {
        attrs.set("preview", AttrValue::Flag);
    }
    if attrs.raw_text("summary") == Some("") {
        attrs.set("summary", AttrValue::Flag);
    }

    if let Some(stripped) = attrs
        .raw_text("path")
        .and_then(|path| path.strip_prefix("file://"))
    {
        let stripped = stripped.to_owned();
        attrs.set("path", AttrValue::Text(stripped));
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heal(pairs: &[(&str, &str)]) -> Attrs {
        normalize_attrs(pairs.iter().copied())
    }

    #[test]
    fn value_becomes_body_only_without_body() {
        let healed = heal(&[("path", "a"), ("value", "v")]);
        assert_eq!(healed.text("body"), Some("v"));
        assert!(!healed.has("value"));
        let kept = heal(&[("path", "a"), ("value", "v"), ("body", "b")]);
        assert_eq!(kept.text("body"), Some("b"));
        assert_eq!(kept.text("value"), Some("v"));
    }

    #[test]
    fn first_unknown_non_empty_attribute_becomes_path() {
        let healed = heal(&[("keys", ""), ("file", "src/a.js"), ("key", "k")]);
        assert_eq!(healed.text("path"), Some("src/a.js"));
        assert!(!healed.has("file"));
        assert_eq!(healed.text("key"), Some("k"));
    }

    #[test]
    fn partial_read_attributes_are_not_promoted() {
        let healed = heal(&[("line", "3"), ("limit", "5")]);
        assert_eq!(healed.text("path"), None);
        assert_eq!(healed.text("line"), Some("3"));
    }

    #[test]
    fn preview_and_bare_summary_become_flags() {
        let healed = heal(&[("preview", "false"), ("summary", "")]);
        assert_eq!(healed.get("preview"), Some(&AttrValue::Flag));
        assert_eq!(healed.get("summary"), Some(&AttrValue::Flag));
        let worded = heal(&[("summary", "auth,login")]);
        assert_eq!(worded.text("summary"), Some("auth,login"));
    }

    #[test]
    fn file_scheme_is_stripped_from_path() {
        assert_eq!(
            heal(&[("path", "file://src/a.js")]).text("path"),
            Some("src/a.js")
        );
        assert_eq!(heal(&[("file", "file://b.js")]).text("path"), Some("b.js"));
    }

    #[test]
    fn duplicate_names_keep_the_first_value() {
        assert_eq!(
            heal(&[("path", "a"), ("path", "b")]).text("path"),
            Some("a")
        );
    }
}
