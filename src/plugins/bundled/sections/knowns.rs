//! `<knowns>` (system chain, priority 100): the loaded data entries (files, `known://`,
//! web pages) in context order. Skills render in the instructions instead.

use super::tag::{summary_attribute, Tag};
use crate::context::packet::{Bucket, MessageBuilder};
use crate::context::ContextRow;
use crate::db::enums::Category;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// Renders `<knowns>`.
pub(super) struct Knowns;

impl AssemblyFilter for Knowns {
    fn priority(&self) -> i32 {
        100
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let rows: Vec<&ContextRow> = context
            .input
            .rows
            .iter()
            .filter(|row| row.category == Category::Data && !row.has_scheme("skill"))
            .collect();
        if rows.is_empty() {
            return;
        }
        message.open_section(Bucket::Data);
        message.push(Bucket::Data, "<knowns>");
        for row in rows {
            message.count_entry(Bucket::Data);
            message.push(Bucket::Data, "\n");
            message.push(Bucket::Data, &render(row));
        }
        message.push(Bucket::Data, "\n</knowns>");
    }
}

/// `<scheme path turn status fidelity summary tokens>body</scheme>`.
fn render(row: &ContextRow) -> String {
    Tag::new(row.tag())
        .attribute("path", &row.path)
        .number("turn", i64::from(row.source_turn))
        .number("status", i64::from(row.status.code()))
        .attribute("fidelity", row.fidelity.as_str())
        .text("summary", summary_attribute(row))
        .number("tokens", row.tokens)
        .close(&row.body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::Fidelity;

    #[test]
    fn data_rows_render_as_tags_named_by_scheme() {
        let fixture = Fixture::new(vec![
            row("skill://style", Category::Data, 0, "tabs"),
            row("src/app.js", Category::Data, 0, "").at(Fidelity::Index),
            row(
                "known://notes",
                Category::Data,
                1,
                "# known known://notes\nhello",
            )
            .attributes(json!({"summary": "notes,\"hello\""})),
            row("get://turn_1/a", Category::Logging, 1, "x"),
        ]);
        assert_eq!(
            fixture.render(&Knowns),
            "<knowns>\n\
             <file path=\"src/app.js\" status=\"200\" fidelity=\"index\"/>\n\
             <known path=\"known://notes\" turn=\"1\" status=\"200\" fidelity=\"full\" \
             summary=\"notes,'hello'\" tokens=\"7\"># known known://notes\nhello</known>\n\
             </knowns>"
        );
    }

    #[test]
    fn no_data_means_no_section() {
        let fixture = Fixture::new(vec![row("skill://style", Category::Data, 0, "tabs")]);
        assert_eq!(fixture.render(&Knowns), "");
    }
}
