//! `<performed>` (user chain, priority 100): what the model's commands did for the current
//! prompt, in order, bodies included.

use super::chronological;
use super::tag::{summary_attribute, target, Tag};
use crate::context::packet::{Bucket, MessageBuilder};
use crate::context::ContextRow;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// Renders `<performed>`.
pub(super) struct Performed;

impl Performed {
    /// The rows of the current loop's work, in order.
    pub(super) fn rows<'a>(context: &'a AssemblyContext<'_>) -> Vec<&'a ContextRow> {
        let mut rows: Vec<&ContextRow> = context
            .history_rows()
            .filter(|row| row.source_turn >= context.loop_start_turn)
            .collect();
        chronological(&mut rows);
        rows
    }
}

impl AssemblyFilter for Performed {
    fn priority(&self) -> i32 {
        100
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let rows = Performed::rows(context);
        if rows.is_empty() {
            return;
        }
        message.open_section(Bucket::Logging);
        message.push(Bucket::Logging, "<performed>");
        for row in rows {
            let bucket = Bucket::of(row.category);
            message.count_entry(bucket);
            message.push(bucket, "\n");
            message.push(bucket, &render(row));
        }
        message.push(Bucket::Logging, "\n</performed>");
    }
}

/// `<scheme path turn status summary fidelity tokens>body</scheme>`.
fn render(row: &ContextRow) -> String {
    Tag::new(row.tag())
        .attribute("path", target(row))
        .number("turn", i64::from(row.source_turn))
        .number("status", i64::from(row.status.code()))
        .text("summary", summary_attribute(row))
        .attribute("fidelity", row.fidelity.as_str())
        .number("tokens", row.tokens)
        .close(&row.body)
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use serde_json::json;

    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::Category;

    #[test]
    fn this_loops_work_renders_with_bodies_and_targets() {
        let fixture = Fixture::new(vec![
            row(
                "set://known%3A//notes",
                Category::Logging,
                1,
                "# set known://notes",
            )
            .attributes(json!({"path": "known://notes"})),
            row(
                "update://reading",
                Category::Logging,
                1,
                "# update\nReading",
            ),
            row("rm://turn_1/x", Category::Logging, 1, "").status(EntryStatus::NotFound),
            row("unknown://q", Category::Unknown, 1, "# unknown\nq"),
            row("prompt://1", Category::Prompt, 1, "Do the thing"),
        ]);
        assert_eq!(
            fixture.render(&Performed),
            "<performed>\n\
             <set path=\"known://notes\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"5\"># set known://notes</set>\n\
             <update path=\"update://reading\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             tokens=\"4\"># update\nReading</update>\n\
             <rm path=\"rm://turn_1/x\" turn=\"1\" status=\"404\" fidelity=\"full\"/>\n\
             </performed>"
        );
    }

    #[test]
    fn a_fresh_loop_has_nothing_performed() {
        let fixture = Fixture::new(vec![
            row("get://turn_1/a", Category::Logging, 1, "old"),
            row("prompt://2", Category::Prompt, 2, "Next"),
        ]);
        assert_eq!(fixture.render(&Performed), "");
    }
}
