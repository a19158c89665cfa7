//! Model-facing text: the files under `text/`, kept apart from code so they can be tuned
//! without touching logic, hold `{name}` placeholders that [`fill`] fills.

/// `template` (without its trailing newline) with each `{name}` replaced by its value.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.trim_end().to_owned(), |text, (name, value)| {
            text.replace(&format!("{{{name}}}"), value)
        })
}
