//! `<prompt>` (user chain, priority 300, always last): the active prompt with the loop's
//! mode, the tools offered and, in ask mode, a warning that files must not change.

use super::tag::Tag;
use super::text::ASK_WARNING;
use crate::context::packet::{Bucket, MessageBuilder};
use crate::db::enums::LoopMode;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};
use crate::plugins::text::fill;

/// Renders `<prompt>`.
pub(super) struct PromptTag;

impl AssemblyFilter for PromptTag {
    fn priority(&self) -> i32 {
        300
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let mode = context.input.policy.mode;
        let warning = (mode == LoopMode::Ask).then(|| fill(ASK_WARNING, &[]));
        let tag = Tag::new("prompt")
            .attribute("mode", mode.as_str())
            .attribute("tools", &context.active_tools.join(","))
            .text("warn", warning.as_deref());
        let body = context
            .active_prompt
            .map_or("", |prompt| prompt.body.as_str());
        message.open_section(Bucket::Prompt);
        if context.active_prompt.is_some() {
            message.count_entry(Bucket::Prompt);
        }
        message.push(Bucket::Prompt, &tag.wrap(body));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::{Category, Fidelity};

    #[test]
    fn the_newest_prompt_is_active_whatever_its_fidelity() {
        let fixture = Fixture::new(vec![
            row("prompt://4", Category::Prompt, 4, "")
                .at(Fidelity::Index)
                .created(9),
            row("prompt://1", Category::Prompt, 1, "Old task").created(2),
        ]);
        assert_eq!(
            fixture.render(&PromptTag),
            "<prompt mode=\"act\" tools=\"get,set,known,unknown,update\"></prompt>"
        );
    }

    #[test]
    fn ask_mode_warns_and_offers_fewer_tools() {
        let mut fixture = Fixture::new(vec![row("prompt://1", Category::Prompt, 1, "Explain")]);
        fixture.policy.mode = LoopMode::Ask;
        let warning = fill(ASK_WARNING, &[]);
        assert_eq!(
            fixture.render(&PromptTag),
            format!(
                "<prompt mode=\"ask\" tools=\"get,known,unknown,update\" warn=\"{warning}\">\
                 Explain</prompt>"
            )
        );
    }

    #[test]
    fn without_a_prompt_the_tag_is_still_there() {
        assert_eq!(
            Fixture::new(Vec::new()).render(&PromptTag),
            "<prompt mode=\"act\" tools=\"get,set,known,unknown,update\"></prompt>"
        );
    }
}
