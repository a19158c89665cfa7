//! `<progress>` (user chain, priority 200): how much is loaded, how full the context is,
//! which files changed on disk since the model last saw them (on the one turn the scan
//! marked them for), the bridge from the performed work to the prompt, and the budget
//! advisories at 50 % and 75 % of the ceiling.

use super::performed::Performed;
use super::tag::Tag;
use super::text::{BRIDGE, BUDGET, CHANGED, COUNTS, FIDELITY};
use crate::budget::CalibratedTokens;
use crate::context::packet::{Bucket, MessageBuilder};
use crate::db::enums::{Category, Fidelity};
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter, BudgetFigures};
use crate::plugins::text::fill;

/// The attribute of a file entry naming the turn whose `<progress>` tells the model the
/// file changed on disk since it last saw it (the project scan sets it).
pub(crate) const CHANGED_ON_DISK: &str = "changed_on_disk";

/// Renders `<progress>`.
pub(super) struct Progress;

impl AssemblyFilter for Progress {
    fn priority(&self) -> i32 {
        200
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let mut lines = vec![counts_line(context)];
        if let Some(budget) = context.input.budget {
            let (used, ceiling, percent) = (
                budget.used_tokens.to_string(),
                budget.ceiling().to_string(),
                budget.percent().to_string(),
            );
            lines.push(fill(
                BUDGET,
                &[
                    ("used", &used),
                    ("ceiling", &ceiling),
                    ("percent", &percent),
                ],
            ));
        }
        lines.extend(fidelity_line(context));
        lines.extend(changed_on_disk(context));
        if !Performed::rows(context).is_empty() {
            lines.push(fill(BRIDGE, &[]));
        }
        lines.extend(context.input.budget.and_then(advisory));
        let turn = context.input.turn.to_string();
        message.open_section(Bucket::System);
        message.push(
            Bucket::System,
            &Tag::new("progress")
                .attribute("turn", &turn)
                .wrap(&lines.join("\n")),
        );
    }
}

/// `2 knowns · 4 logging · 1 unknown`.
fn counts_line(context: &AssemblyContext<'_>) -> String {
    let count = |wanted: Category| {
        context
            .input
            .rows
            .iter()
            .filter(|row| row.category == wanted && !row.has_scheme("skill"))
            .count()
    };
    let plural = |number: usize, word: &str| match number {
        1 => format!("1 {word}"),
        _ => format!("{number} {word}s"),
    };
    let knowns = plural(count(Category::Data), "known");
    let logging = format!("{} logging", count(Category::Logging));
    let unknowns = plural(count(Category::Unknown), "unknown");
    fill(
        COUNTS,
        &[
            ("knowns", &knowns),
            ("logging", &logging),
            ("unknowns", &unknowns),
        ],
    )
}

/// `Entries: 3 full (40 tok) · 1 index (0 tok)` over data and logging rows.
fn fidelity_line(context: &AssemblyContext<'_>) -> Option<String> {
    let groups: Vec<String> = [Fidelity::Full, Fidelity::Summary, Fidelity::Index]
        .into_iter()
        .filter_map(|fidelity| {
            let (entries, tokens) = context
                .input
                .rows
                .iter()
                .filter(|row| matches!(row.category, Category::Data | Category::Logging))
                .filter(|row| row.fidelity == fidelity)
                .fold((0, 0), |(entries, tokens), row| {
                    (entries + 1, tokens + row.tokens)
                });
            (entries > 0).then(|| format!("{entries} {fidelity} ({tokens} tok)"))
        })
        .collect();
    if groups.is_empty() {
        return None;
    }
    Some(fill(FIDELITY, &[("groups", &groups.join(" · "))]))
}

/// One line per file the scan marked as changed on disk for this turn.
fn changed_on_disk<'a>(context: &'a AssemblyContext<'_>) -> impl Iterator<Item = String> + 'a {
    let turn = i64::from(context.input.turn);
    context
        .input
        .rows
        .iter()
        .filter(move |row| {
            row.scheme.is_none()
                && row
                    .attributes
                    .get(CHANGED_ON_DISK)
                    .and_then(|value| value.as_i64())
                    == Some(turn)
        })
        .map(|row| fill(CHANGED, &[("path", &row.path)]))
}

/// The budget's advisory for the share of the ceiling in use, if any.
fn advisory(budget: BudgetFigures) -> Option<String> {
    let tokens = |value: i64| CalibratedTokens::new(u64::try_from(value).unwrap_or(0));
    crate::budget::advisory(tokens(budget.used_tokens), tokens(budget.ceiling()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{row, Fixture, RowChanges};
    use super::*;

    fn rows() -> Vec<crate::context::ContextRow> {
        vec![
            row("known://a", Category::Data, 1, "12345678"),
            row("src/b.js", Category::Data, 0, "").at(Fidelity::Index),
            row("get://turn_1/a", Category::Logging, 1, "abcd"),
            row("unknown://q", Category::Unknown, 1, "q"),
            row("prompt://1", Category::Prompt, 1, "go"),
        ]
    }

    #[test]
    fn counts_fidelity_stats_and_bridge() {
        let fixture = Fixture::new(rows());
        let counts = fill(
            COUNTS,
            &[
                ("knowns", "2 knowns"),
                ("logging", "1 logging"),
                ("unknowns", "1 unknown"),
            ],
        );
        let stats = fill(FIDELITY, &[("groups", "2 full (3 tok) · 1 index (0 tok)")]);
        let bridge = fill(BRIDGE, &[]);
        assert_eq!(
            fixture.render(&Progress),
            format!("<progress turn=\"2\">{counts}\n{stats}\n{bridge}</progress>")
        );
    }

    #[test]
    fn budget_line_and_advisories_follow_the_ceiling() {
        let figures = |used| BudgetFigures {
            context_size: 10_000,
            used_tokens: used,
        };
        assert_eq!(figures(0).ceiling(), 8_500);
        let mut fixture = Fixture::new(rows());
        fixture.budget = Some(figures(4_249));
        let quiet = fixture.render(&Progress);
        let budget = fill(
            BUDGET,
            &[("used", "4249"), ("ceiling", "8500"), ("percent", "50")],
        );
        assert!(quiet.contains(&budget));
        assert!(!quiet.contains("YOU MAY") && !quiet.contains("YOU MUST"));

        fixture.budget = Some(figures(4_250));
        let half = fixture.render(&Progress);
        assert!(half.contains("YOU MAY") && half.contains("50%"), "{half}");

        fixture.budget = Some(figures(6_375));
        let three_quarters = fixture.render(&Progress);
        assert!(three_quarters.contains("YOU MUST") && three_quarters.contains("75%"));
        assert!(!three_quarters.contains("YOU MAY"));
    }

    #[test]
    fn a_file_changed_on_disk_is_named_on_the_turn_it_was_marked_for_only() {
        let marked = |turn: i32| serde_json::json!({ CHANGED_ON_DISK: turn });
        let fixture = Fixture::new(vec![
            row("src/a.js", Category::Data, 1, "new").attributes(marked(2)),
            row("src/old.js", Category::Data, 1, "old").attributes(marked(1)),
            row("known://src/b.js", Category::Data, 1, "fact").attributes(marked(2)),
        ]);
        let text = fixture.render(&Progress);
        let line = |path| fill(CHANGED, &[("path", path)]);
        assert!(text.contains(&line("src/a.js")), "{text}");
        assert!(!text.contains(&line("src/old.js")), "{text}");
        assert!(!text.contains(&line("known://src/b.js")), "{text}");
    }

    #[test]
    fn a_tiny_window_still_has_a_positive_ceiling() {
        let tiny = BudgetFigures {
            context_size: 100,
            used_tokens: 5,
        };
        assert_eq!(tiny.ceiling(), 1);
        assert_eq!(tiny.percent(), 500);
        assert!(advisory(tiny).is_some_and(|advice| advice.contains("YOU MUST")));
    }
}
