//! The model-facing text of the bundled sections (in `src/plugins/text/`).

/// The instructions' opening: role, reply shape, rules; `{tools}` is the active tool list.
pub(super) const PREAMBLE: &str = include_str!("../../text/preamble.md");
/// Progress: how many entries of each section are loaded.
pub(super) const COUNTS: &str = include_str!("../../text/assembly/counts.md");
/// Progress: tokens used against the ceiling.
pub(super) const BUDGET: &str = include_str!("../../text/assembly/budget.md");
/// Progress: entries and tokens per fidelity.
pub(super) const FIDELITY: &str = include_str!("../../text/assembly/fidelity.md");
/// Progress: one file that changed on disk since the model last saw it.
pub(super) const CHANGED: &str = include_str!("../../text/assembly/changed.md");
/// Progress: ties the performed work to the prompt that caused it.
pub(super) const BRIDGE: &str = include_str!("../../text/assembly/bridge.md");
/// A skill whose body the model has not loaded: its summary and how to load it.
pub(super) const SKILL_UNLOADED: &str = include_str!("../../text/assembly/skill_unloaded.md");
/// The `warn` attribute of an ask-mode prompt.
pub(super) const ASK_WARNING: &str = include_str!("../../text/assembly/ask_warning.md");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::text::fill;

    #[test]
    fn placeholders_are_filled_and_none_is_left() {
        let filled = fill(
            BUDGET,
            &[("used", "1"), ("ceiling", "2"), ("percent", "50")],
        );
        assert!(filled.contains('1') && filled.contains("50"));
        assert!(!filled.contains('{'));
        assert!(!fill(PREAMBLE, &[("tools", "get")]).contains("{tools}"));
    }

    #[test]
    fn the_preamble_teaches_the_lifecycle() {
        for lesson in [
            "<update>",
            "<summarize>",
            "<unknown>",
            "known://",
            "summary=",
            "fidelity=",
            "first-last kind name",
        ] {
            assert!(PREAMBLE.contains(lesson), "preamble lacks {lesson}");
        }
    }
}
