//! Materialization and assembly of one turn for stores of 1k, 10k and 100k entries of which
//! a fixed 100 are visible (the rest archived): the cost must follow the visible entries.

use crate::db::Conn;
use criterion::{BenchmarkId, Criterion};
use diesel::connection::SimpleConnection;

use crate::context::materialize::{materialize, Projector, TurnTarget};
use crate::context::view::EntryView;
use crate::context::TokenMath;
use crate::db::enums::Fidelity;
use crate::db::ids::RunId;
use crate::db::testing::{migrated, project_with_run};
use crate::db::ConnectionSetup;
use crate::plugins::assembly::{AssemblyInput, BudgetFigures, ToolDocs};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::ToolSettings;
use crate::plugins::Plugins;

const VISIBLE: i64 = 100;
const TOKENS_PER_CHARACTER: u32 = 4;

struct Views;

impl Projector for Views {
    fn project(&self, entry: &EntryView<'_>) -> String {
        match entry.fidelity {
            Fidelity::Full => format!("# {} {}\n{}", entry.plugin_scheme(), entry.path, entry.body),
            _ => entry.attribute("summary").unwrap_or_default().to_owned(),
        }
    }
}

struct Tools;

impl ToolDocs for Tools {
    fn active_tools(&self, _: &ToolPolicy) -> Vec<&str> {
        vec![
            "get",
            "set",
            "known",
            "unknown",
            "rm",
            "summarize",
            "update",
        ]
    }

    fn docs(&self, _: &ToolPolicy) -> Vec<(&'static str, &'static str)> {
        vec![
            ("get", "<get path=\"src/*.rs\">needle</get>"),
            ("set", "<set path=\"a\"/>"),
        ]
    }
}

/// A database with one run holding `entries` entries, `VISIBLE` of them not archived.
fn store(dir: &tempfile::TempDir, entries: i64) -> Option<(Conn, RunId)> {
    let mut conn = migrated(
        &crate::db::Store::Sqlite(dir.path().join("bench.db")),
        ConnectionSetup {
            token_divisor: TOKENS_PER_CHARACTER,
            ..ConnectionSetup::default()
        },
    )
    .ok()?;
    let run = project_with_run(&mut conn, None).ok()?.id;
    let stride = (entries / VISIBLE).max(1);
    conn.batch_execute(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {entries})
         INSERT INTO known_entries (run_id, turn, path, body, fidelity, attributes)
         SELECT {run}, i % 50,
                CASE i % 4 WHEN 0 THEN 'known://topic/e' || i
                           WHEN 1 THEN 'src/file' || i || '.rs'
                           WHEN 2 THEN 'get://turn_' || (i % 50) || '/x' || i
                           ELSE 'unknown://q' || i END,
                hex(zeroblob(100)),
                CASE WHEN i % {stride} = 0 THEN 'full' ELSE 'archive' END,
                '{{\"summary\":\"keywords,for,this\"}}'
         FROM n;
         INSERT INTO known_entries (run_id, turn, path, body) VALUES ({run}, 50, 'prompt://50', 'Do it');
         COMMIT;"
    ))
    .ok()?;
    Some((conn, run))
}

pub fn materialize_and_assemble(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("context_turn");
    group.sample_size(30);
    let plugins = Plugins::bundled(ToolSettings::default());
    let assembly = plugins.assembly();
    let tokens = TokenMath::new(TOKENS_PER_CHARACTER);
    for entries in [1_000i64, 10_000, 100_000] {
        let Ok(dir) = tempfile::tempdir() else {
            return;
        };
        let Some((mut conn, run)) = store(&dir, entries) else {
            return;
        };
        let target = TurnTarget {
            run_id: run,
            loop_id: None,
            turn: 51,
        };
        group.bench_with_input(
            BenchmarkId::from_parameter(entries),
            &entries,
            |bench, _| {
                bench.iter(|| {
                    let rows = materialize(&mut conn, target, &Views, tokens).unwrap_or_default();
                    let input = AssemblyInput {
                        run,
                        rows: &rows,
                        turn: 51,
                        policy: ToolPolicy::act(),
                        tools: &Tools,
                        persona: Some("Terse."),
                        budget: Some(BudgetFigures {
                            context_size: 32_768,
                            used_tokens: 9_000,
                        }),
                    };
                    assembly.assemble(input, tokens)
                });
            },
        );
    }
    group.finish();
}
