//! Materialization against a real SQLite file.

use crate::db::Conn;
use crate::plugins::Plugins;
use diesel::sql_types::{BigInt, Text};
use diesel::{sql_query, QueryableByName, RunQueryDsl};
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::context::Packet;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::queries::entries::{set_fidelity, upsert_entry};
use crate::db::queries::snapshot::turn_context;
use crate::db::testing::{project_with_run, TestDb};
use crate::plugins::assembly::{AssemblyInput, BudgetFigures};
use crate::plugins::bundled::sections::testing::{bundled_sections, FakeTools};
use crate::plugins::policy::ToolPolicy;

const TOKENS: TokenMath = TokenMath::new(4);

struct Db {
    _dir: tempfile::TempDir,
    conn: Conn,
    run: RunId,
    _database: Option<crate::db::testing::ScratchDatabase>,
}

fn database() -> Db {
    database_on(TestDb::new())
}

/// A project with one run in `db`.
fn database_on(db: TestDb) -> Db {
    let TestDb {
        dir,
        mut conn,
        database,
        ..
    } = db;
    let run = project_with_run(&mut conn, None).unwrap().id;
    Db {
        _dir: dir,
        _database: database,
        conn,
        run,
    }
}

impl Db {
    fn write(&mut self, path: &str, body: &str, turn: i32) {
        self.write_with(path, body, turn, EntryStatus::Ok, None);
    }

    fn write_with(
        &mut self,
        path: &str,
        body: &str,
        turn: i32,
        status: EntryStatus,
        attributes: Option<serde_json::Value>,
    ) {
        let entry = EntryUpsertForm {
            run_id: self.run,
            loop_id: None,
            turn,
            path: path.into(),
            body: body.into(),
            status,
            fidelity: None,
            hash: None,
            attributes,
        };
        upsert_entry(&mut self.conn, &entry).unwrap();
    }

    fn fidelity(&mut self, path: &str, fidelity: Fidelity) {
        set_fidelity(
            &mut self.conn,
            self.run,
            &Selector::Path(path.into()),
            fidelity,
        )
        .unwrap();
    }
}

fn target(run_id: RunId, turn: i32) -> TurnTarget {
    TurnTarget {
        run_id,
        loop_id: None,
        turn,
    }
}

/// Full: a heading and the body; summary: the summary attribute; index: nothing.
struct HeadingViews;

impl Projector for HeadingViews {
    fn project(&self, entry: &EntryView<'_>) -> String {
        match entry.fidelity {
            Fidelity::Full => format!("# {} {}\n{}", entry.plugin_scheme(), entry.path, entry.body),
            Fidelity::Summary => entry.attribute("summary").unwrap_or_default().to_owned(),
            Fidelity::Index | Fidelity::Archive => String::new(),
        }
    }
}

fn assemble(rows: &[ContextRow], mode: LoopMode, budget: Option<BudgetFigures>) -> Packet {
    let input = AssemblyInput {
        run: crate::db::ids::RunId(1),
        rows,
        turn: 2,
        policy: ToolPolicy {
            mode,
            ..ToolPolicy::act()
        },
        tools: &FakeTools,
        persona: None,
        budget,
    };
    bundled_sections().assemble(input, TOKENS)
}

fn stored_matches(conn: &mut Conn, run: RunId, turn: i32, rows: &[ContextRow]) {
    let stored = turn_context(conn, run, turn).unwrap();
    assert_eq!(stored.len(), rows.len());
    for (saved, row) in stored.iter().zip(rows) {
        assert_eq!(
            (
                saved.ordinal,
                saved.path.as_str(),
                saved.body.as_str(),
                i64::from(saved.tokens),
                saved.fidelity,
                saved.category,
                saved.source_turn,
                saved.status,
            ),
            (
                row.ordinal,
                row.path.as_str(),
                row.body.as_str(),
                row.tokens,
                row.fidelity,
                row.category,
                row.source_turn,
                row.status,
            )
        );
        assert_eq!(
            serde_json::from_str::<Value>(&saved.attributes).unwrap(),
            Value::Object(row.attributes.clone())
        );
    }
}

#[test]
fn visible_rows_are_projected_counted_and_snapshotted_in_context_order() {
    let mut db = database();
    db.write("src/app.js", "let a = 1;", 0);
    db.write("notes.md", "notes", 1);
    db.write_with(
        "known://fact",
        "water is wet",
        1,
        EntryStatus::Ok,
        Some(json!({"summary": "water,wet"})),
    );
    db.write("known://old", "stale", 1);
    db.write_with("sh://turn_1/ls", "ls", 1, EntryStatus::Proposed, None);
    db.write("think://turn_1/", "hmm", 1);
    db.write("system://1", "audit", 1);
    db.write("get://turn_1/src", "listing", 1);
    db.write("prompt://1", "Do it", 1);
    db.fidelity("notes.md", Fidelity::Index);
    db.fidelity("known://fact", Fidelity::Summary);
    db.fidelity("known://old", Fidelity::Archive);

    let rows = materialize(&mut db.conn, target(db.run, 1), &HeadingViews, TOKENS).unwrap();
    let seen: Vec<(&str, Fidelity, &str, i64)> = rows
        .iter()
        .map(|row| {
            (
                row.path.as_str(),
                row.fidelity,
                row.body.as_str(),
                row.tokens,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("notes.md", Fidelity::Index, "", 0),
            ("known://fact", Fidelity::Summary, "water,wet", 3),
            (
                "src/app.js",
                Fidelity::Full,
                "# file src/app.js\nlet a = 1;",
                7
            ),
            (
                "get://turn_1/src",
                Fidelity::Full,
                "# get get://turn_1/src\nlisting",
                8
            ),
            (
                "prompt://1",
                Fidelity::Full,
                "# prompt prompt://1\nDo it",
                7
            ),
        ]
    );
    let ordinals: Vec<i32> = rows.iter().map(|row| row.ordinal).collect();
    assert_eq!(ordinals, [1, 2, 3, 4, 5]);
    stored_matches(&mut db.conn, db.run, 1, &rows);
}

#[test]
fn the_snapshot_is_what_was_assembled_and_later_reads_do_not_touch_it() {
    let mut db = database();
    db.write_with(
        "known://fact",
        "water is wet",
        1,
        EntryStatus::Ok,
        Some(json!({"summary": "water"})),
    );
    db.write("prompt://1", "Do it", 1);
    let rows = materialize(&mut db.conn, target(db.run, 1), &HeadingViews, TOKENS).unwrap();
    let packet = assemble(&rows, LoopMode::Act, None);
    let stored = turn_context(&mut db.conn, db.run, 1).unwrap();
    let both = format!("{}\n{}", packet.system, packet.user);
    assert!(stored.iter().all(|row| both.contains(&row.body)));
    assert_eq!(
        packet.entry_tokens,
        stored.iter().map(|row| i64::from(row.tokens)).sum::<i64>()
    );

    db.fidelity("known://fact", Fidelity::Summary);
    let after_dispatch = read_context(&mut db.conn, db.run, &HeadingViews, TOKENS).unwrap();
    assert_eq!(
        after_dispatch.first().map(|row| row.body.as_str()),
        Some("water")
    );
    stored_matches(&mut db.conn, db.run, 1, &rows);

    let next = materialize(&mut db.conn, target(db.run, 2), &HeadingViews, TOKENS).unwrap();
    stored_matches(&mut db.conn, db.run, 2, &next);
    stored_matches(&mut db.conn, db.run, 1, &rows);
}

#[derive(QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = Text)]
    detail: String,
}

#[test]
fn the_read_walks_only_visible_entries() {
    // EXPLAIN QUERY PLAN is SQLite's.
    let mut db = database_on(TestDb::sqlite());
    let plan: Vec<PlanLine> = sql_query(
        "EXPLAIN QUERY PLAN SELECT path FROM v_model_context WHERE run_id = ? ORDER BY ordinal",
    )
    .bind::<BigInt, _>(db.run)
    .load(&mut db.conn)
    .unwrap();
    let details: Vec<&str> = plan.iter().map(|line| line.detail.as_str()).collect();
    assert!(
        details
            .iter()
            .any(|detail| detail.contains("USING INDEX idx_known_entries_visible (run_id=?)")),
        "{details:#?}"
    );
}

#[test]
fn work_units_run_on_a_connection() {
    let mut db = database();
    db.write("prompt://1", "Do it", 1);
    let materialized = materialize(&mut db.conn, target(db.run, 3), &HeadingViews, TOKENS).unwrap();
    let read = read_context(&mut db.conn, db.run, &HeadingViews, TOKENS).unwrap();
    assert_eq!(materialized, read);
    stored_matches(&mut db.conn, db.run, 3, &materialized);
}

/// One random write: which kind of entry, its turn, body and summary.
fn entry_strategy() -> impl Strategy<Value = (usize, i32, String, Option<String>)> {
    (
        0usize..7,
        0i32..5,
        "[a-z \\n\"<>é]{0,40}",
        proptest::option::of("[a-z,\"]{0,20}"),
    )
}

fn entry_path(kind: usize, index: usize, turn: i32) -> String {
    match kind {
        0 => format!("known://k{index}"),
        1 => format!("src/f{index}.js"),
        2 => format!("get://turn_{turn}/x{index}"),
        3 => format!("unknown://q{index}"),
        4 => format!("prompt://{}", turn + 1),
        5 => format!("skill://s{index}"),
        _ => format!("update://u{index}"),
    }
}

fn fidelity_of(code: u8) -> Fidelity {
    match code % 4 {
        0 => Fidelity::Full,
        1 => Fidelity::Summary,
        2 => Fidelity::Index,
        _ => Fidelity::Archive,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn measures_account_for_the_whole_packet(
        entries in proptest::collection::vec(entry_strategy(), 0..20),
        changes in proptest::collection::vec((0usize..20, 0u8..4), 0..10),
        ask in any::<bool>(),
        used in proptest::option::of(0i64..20_000),
    ) {
        let mut db = database();
        let mut paths = Vec::new();
        for (index, (kind, turn, body, summary)) in entries.iter().enumerate() {
            let path = entry_path(*kind, index, *turn);
            let attributes = summary.as_ref().map(|summary| json!({"summary": summary}));
            db.write_with(&path, body, *turn, EntryStatus::Ok, attributes);
            paths.push(path);
        }
        for (index, code) in changes {
            if let Some(path) = paths.get(index) {
                db.fidelity(path, fidelity_of(code));
            }
        }
        let rows = materialize(&mut db.conn, target(db.run, 2), &HeadingViews, TOKENS).unwrap();
        let mode = if ask { LoopMode::Ask } else { LoopMode::Act };
        let budget = used.map(|used_tokens| BudgetFigures { context_size: 16_384, used_tokens });
        let packet = assemble(&rows, mode, budget);

        let measured = TOKENS.count(&packet.system) + TOKENS.count(&packet.user);
        prop_assert_eq!(packet.assembled_tokens, measured);
        let bucket_tokens: i64 = packet.distribution.iter().map(|share| share.tokens).sum();
        prop_assert_eq!(bucket_tokens, measured);
        let bucket_entries: i64 = packet.distribution.iter().map(|share| share.entries).sum();
        prop_assert_eq!(bucket_entries, i64::try_from(rows.len()).unwrap() + 1);
        let stored = turn_context(&mut db.conn, db.run, 2).unwrap();
        let stored_tokens: i64 = stored.iter().map(|row| i64::from(row.tokens)).sum();
        prop_assert_eq!(packet.entry_tokens, stored_tokens);
        prop_assert!(packet.user.ends_with("</prompt>"));
        prop_assert!(rows.iter().all(|row| row.fidelity != Fidelity::Archive));
    }
}

#[test]
fn the_registry_projects_rows_by_fidelity() {
    let mut db = database();
    db.write_with(
        "known://fact",
        "water is wet",
        1,
        EntryStatus::Ok,
        Some(json!({"summary": "water,wet"})),
    );
    db.write_with(
        "src/a.rs",
        "fn main() {}",
        1,
        EntryStatus::Ok,
        Some(json!({"summary": "entry point"})),
    );
    db.fidelity("src/a.rs", Fidelity::Index);
    let plugins = Plugins::bundled(crate::plugins::tool::ToolSettings::default());
    let rows = materialize(&mut db.conn, target(db.run, 1), &plugins, TOKENS).unwrap();
    let bodies: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row.path.as_str(), row.body.as_str()))
        .collect();
    assert_eq!(bodies.first(), Some(&("src/a.rs", "entry point")));
    assert!(bodies
        .iter()
        .any(|(path, body)| *path == "known://fact" && body.contains("water is wet")));
    assert!(rows.iter().all(|row| row.tokens == TOKENS.count(&row.body)));
}

mod differences;
