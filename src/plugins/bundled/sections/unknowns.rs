//! `<unknowns>` (system chain, priority 300): the open questions the model registered.

use super::tag::Tag;
use crate::context::packet::{Bucket, MessageBuilder};
use crate::context::ContextRow;
use crate::db::enums::Category;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// Renders `<unknowns>`.
pub(super) struct Unknowns;

impl AssemblyFilter for Unknowns {
    fn priority(&self) -> i32 {
        300
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let rows: Vec<&ContextRow> = context
            .input
            .rows
            .iter()
            .filter(|row| row.category == Category::Unknown)
            .collect();
        if rows.is_empty() {
            return;
        }
        message.open_section(Bucket::Unknown);
        message.push(Bucket::Unknown, "<unknowns>");
        for row in rows {
            message.count_entry(Bucket::Unknown);
            message.push(Bucket::Unknown, "\n");
            message.push(Bucket::Unknown, &render(row));
        }
        message.push(Bucket::Unknown, "\n</unknowns>");
    }
}

/// `<unknown path turn fidelity tokens>body</unknown>`, open and closed even when empty.
fn render(row: &ContextRow) -> String {
    Tag::new(row.tag())
        .attribute("path", &row.path)
        .number("turn", i64::from(row.source_turn))
        .attribute("fidelity", row.fidelity.as_str())
        .number("tokens", row.tokens)
        .wrap(&row.body)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;
    use crate::db::enums::Fidelity;

    #[test]
    fn open_questions_render_open_and_closed() {
        let fixture = Fixture::new(vec![
            row(
                "unknown://what%20is%20in%20a.txt",
                Category::Unknown,
                1,
                "# unknown\nwhat is in a.txt",
            ),
            row("unknown://later", Category::Unknown, 0, "").at(Fidelity::Index),
            row("known://k", Category::Data, 1, "k"),
        ]);
        assert_eq!(
            fixture.render(&Unknowns),
            "<unknowns>\n\
             <unknown path=\"unknown://what%20is%20in%20a.txt\" turn=\"1\" fidelity=\"full\" \
             tokens=\"7\"># unknown\nwhat is in a.txt</unknown>\n\
             <unknown path=\"unknown://later\" fidelity=\"index\"></unknown>\n\
             </unknowns>"
        );
    }

    #[test]
    fn no_questions_means_no_section() {
        let fixture = Fixture::new(vec![row("known://k", Category::Data, 1, "k")]);
        assert_eq!(fixture.render(&Unknowns), "");
    }
}
