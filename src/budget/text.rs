//! Model-facing budget text: templates kept in `text/*.md` so they can be tuned without
//! touching code, and the one function that fills their `{placeholders}`.

/// The message of the write that tripped the guard.
pub(super) const GUARD_TRIPPED: &str = include_str!("text/guard_tripped.md");
/// The message of every later tool of a tripped turn.
pub(super) const GUARD_SKIPPED: &str = include_str!("text/guard_skipped.md");
/// The progress advisory from 50 % of the ceiling.
pub(super) const ADVISORY_HALF: &str = include_str!("text/advisory_half.md");
/// The progress advisory from 75 % of the ceiling.
pub(super) const ADVISORY_THREE_QUARTERS: &str = include_str!("text/advisory_three_quarters.md");
/// The prompt of a panic loop's first turn.
pub(super) const PANIC: &str = include_str!("text/panic.md");
/// The prompt of a panic loop's later turns.
pub(super) const PANIC_CONTINUE: &str = include_str!("text/panic_continue.md");
/// The line added to a continuation after a turn that did not shrink the context.
pub(super) const PANIC_STRIKE: &str = include_str!("text/panic_strike.md");

/// The template with each `{name}` replaced by its value, trailing whitespace trimmed.
pub(super) fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut text = template.trim_end().to_owned();
    for (name, value) in values {
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_every_occurrence_and_trims() {
        let text = fill(
            "{a} and {a} but {b}\n",
            &[("a", "x".into()), ("b", "y".into())],
        );
        assert_eq!(text, "x and x but y");
    }

    #[test]
    fn fill_leaves_unknown_names_alone() {
        assert_eq!(fill("{c}", &[("a", "x".into())]), "{c}");
    }

    #[test]
    fn templates_use_rfc_2119_words() {
        for template in [
            GUARD_TRIPPED,
            GUARD_SKIPPED,
            ADVISORY_HALF,
            ADVISORY_THREE_QUARTERS,
            PANIC,
            PANIC_CONTINUE,
            PANIC_STRIKE,
        ] {
            let upper = ["MUST", "SHOULD", "MAY"];
            assert!(
                upper
                    .iter()
                    .any(|word| template.contains(&format!("YOU {word}"))),
                "no RFC 2119 requirement in: {template}"
            );
        }
    }
}
