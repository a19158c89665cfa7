//! `<previous>` (system chain, priority 200): what earlier loops asked and did, one
//! self-closing line per entry with a short summary.

use super::chronological;
use super::tag::{cut, strip_result_prefixes, target, Tag, SUMMARY_LIMIT};
use crate::context::packet::{Bucket, MessageBuilder};
use crate::context::ContextRow;
use crate::db::enums::Category;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// Longest summary of an earlier prompt.
const PROMPT_SUMMARY_LIMIT: usize = 512;

/// Renders `<previous>`.
pub(super) struct Previous;

impl AssemblyFilter for Previous {
    fn priority(&self) -> i32 {
        200
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let mut rows: Vec<&ContextRow> = context
            .history_rows()
            .filter(|row| row.source_turn < context.loop_start_turn)
            .collect();
        if rows.is_empty() {
            return;
        }
        chronological(&mut rows);
        message.open_section(Bucket::Logging);
        message.push(Bucket::Logging, "<previous>");
        for row in rows {
            let bucket = Bucket::of(row.category);
            message.count_entry(bucket);
            message.push(bucket, "\n");
            message.push(bucket, &render(row));
        }
        message.push(Bucket::Logging, "\n</previous>");
    }
}

/// `<scheme path turn status summary fidelity tokens/>`.
fn render(row: &ContextRow) -> String {
    let limit = if row.category == Category::Prompt {
        PROMPT_SUMMARY_LIMIT
    } else {
        SUMMARY_LIMIT
    };
    let source = row
        .attribute("summary")
        .unwrap_or_else(|| cut(&row.body, limit));
    let summary = strip_result_prefixes(source);
    Tag::new(row.tag())
        .attribute("path", target(row))
        .number("turn", i64::from(row.source_turn))
        .number("status", i64::from(row.status.code()))
        .text("summary", Some(cut(&summary, limit)))
        .attribute("fidelity", row.fidelity.as_str())
        .number("tokens", row.tokens)
        .close("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::Fidelity;

    fn earlier_loop() -> Vec<crate::context::ContextRow> {
        vec![
            row(
                "get://turn_1/src/a.js",
                Category::Logging,
                1,
                "# get get://turn_1/src/a.js",
            )
            .attributes(json!({"path": "src/a.js"})),
            row(
                "summarize://done",
                Category::Logging,
                2,
                "# summarize\nAll \"done\"",
            )
            .at(Fidelity::Summary),
            row("prompt://1", Category::Prompt, 1, "Do the thing"),
            row("prompt://3", Category::Prompt, 3, "Now the next thing"),
        ]
    }

    #[test]
    fn earlier_loops_render_chronologically_by_fidelity_group() {
        let mut fixture = Fixture::new(earlier_loop());
        fixture.turn = 3;
        assert_eq!(
            fixture.render(&Previous),
            "<previous>\n\
             <summarize path=\"summarize://done\" turn=\"2\" status=\"200\" \
             summary=\"# summarize\nAll 'done'\" fidelity=\"summary\" tokens=\"6\"/>\n\
             <prompt path=\"prompt://1\" turn=\"1\" status=\"200\" summary=\"Do the thing\" \
             fidelity=\"full\" tokens=\"3\"/>\n\
             <get path=\"src/a.js\" turn=\"1\" status=\"200\" summary=\"# get src/a.js\" \
             fidelity=\"full\" tokens=\"7\"/>\n\
             </previous>"
        );
    }

    #[test]
    fn the_first_loop_has_no_previous() {
        let mut rows = earlier_loop();
        rows.pop();
        assert_eq!(Fixture::new(rows).render(&Previous), "");
    }
}
