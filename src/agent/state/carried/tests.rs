use serde_json::json;

use super::*;
use crate::db::enums::Category;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::SchemeRow;
use crate::db::queries::{entries, schemes};
use crate::db::testing::{sample_run, write, TestDb};

/// `run/state`'s history, unknowns, proposals and summary.
type Parts = (
    Vec<HistoryEntry>,
    Vec<UnknownEntry>,
    Vec<UnresolvedRow>,
    Option<String>,
);

/// What `run/state` reported before it was carried: each part read whole from the views.
fn whole(conn: &mut Conn, run: RunId) -> Parts {
    let history = entries::run_log(conn, run)
        .unwrap()
        .into_iter()
        .map(|row| HistoryEntry {
            tool: row.tool,
            target: row.target,
            status: row.status,
            path: row.path,
            body: row.body,
        })
        .collect();
    let unknowns = entries::entries_of_scheme(conn, run, "unknown")
        .unwrap()
        .into_iter()
        .map(|row| UnknownEntry {
            path: row.path,
            body: row.body,
        })
        .collect();
    let summary = entries::entries_of_scheme(conn, run, "summarize")
        .unwrap()
        .into_iter()
        .rev()
        .find(|row| row.status == EntryStatus::Ok)
        .map(|row| row.body);
    (
        history,
        unknowns,
        entries::unresolved(conn, run).unwrap(),
        summary,
    )
}

fn parts(state: &CarriedState) -> Parts {
    (
        state.history(),
        state.unknowns(),
        state.unresolved(),
        state.latest_summary(),
    )
}

/// Carries `carried` over what changed, and checks it against the views and a whole read;
/// `merged`: whether the read must have merged rather than read whole.
fn carry(conn: &mut Conn, run: RunId, carried: CarriedState, merged: bool) -> CarriedState {
    let (revision, removed, schemes) = (carried.revision, carried.removed, carried.schemes);
    let next = CarriedState::read(conn, run, Some(carried)).unwrap();
    assert_eq!(parts(&next), whole(conn, run));
    assert_eq!(next, CarriedState::read(conn, run, None).unwrap());
    assert!(next.revision > revision, "nothing was stamped");
    assert_eq!(
        merged,
        (next.removed, next.schemes) == (removed, schemes),
        "merged or read whole as it should"
    );
    next
}

fn proposal(run: RunId, path: &str, command: &str, turn: i32) -> EntryUpsertForm {
    let mut form = write(run, path, command, turn);
    form.status = EntryStatus::Proposed;
    form.attributes = Some(json!({"command": command}));
    form
}

#[test]
fn a_carried_state_equals_a_whole_read_after_each_kind_of_write() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn).id;
    let other = sample_run(conn).id;
    entries::upsert_entry(conn, &write(run, "prompt://1", "do it", 1)).unwrap();
    entries::upsert_entry(conn, &write(run, "system://1", "you are", 1)).unwrap();
    entries::upsert_entry(conn, &write(run, "app.js", "code", 1)).unwrap();
    let mut carried = CarriedState::read(conn, run, None).unwrap();
    assert_eq!(parts(&carried), whole(conn, run));

    // New rows of each part, and a write to another run that must not show.
    entries::upsert_entry(conn, &write(run, "known://fact", "first", 2)).unwrap();
    entries::upsert_entry(conn, &write(run, "unknown://why", "why?", 2)).unwrap();
    entries::upsert_entry(conn, &write(run, "summarize://done", "done", 2)).unwrap();
    entries::upsert_entry(conn, &proposal(run, "sh://turn_2/ls", "ls", 2)).unwrap();
    entries::upsert_entry(conn, &write(other, "known://elsewhere", "x", 1)).unwrap();
    carried = carry(conn, run, carried, true);
    assert_eq!(carried.unresolved().len(), 1);

    // A fact rewritten keeps its id with a new body.
    entries::upsert_entry(conn, &write(run, "known://fact", "second", 3)).unwrap();
    carried = carry(conn, run, carried, true);
    assert!(carried.history().iter().any(|row| row.body == "second"));

    // A proposal resolved enters the log, in id order.
    entries::resolve_entry(conn, run, "sh://turn_2/ls", EntryStatus::Ok, Some("a\n")).unwrap();
    carried = carry(conn, run, carried, true);
    assert!(carried.unresolved().is_empty());

    // Attributes change the target; a summary that failed is not the latest.
    entries::update_attributes(conn, run, "known://fact", &json!({"path": "x.rs"})).unwrap();
    let mut failed = write(run, "summarize://again", "nope", 3);
    failed.status = EntryStatus::Forbidden;
    entries::upsert_entry(conn, &failed).unwrap();
    carried = carry(conn, run, carried, true);
    assert_eq!(carried.latest_summary().as_deref(), Some("done"));

    // A file proposal enters, then leaves every part once accepted.
    let mut edit = write(run, "app.js", "new code", 4);
    edit.status = EntryStatus::Proposed;
    entries::upsert_entry(conn, &edit).unwrap();
    carried = carry(conn, run, carried, true);
    entries::resolve_entry(conn, run, "app.js", EntryStatus::Ok, None).unwrap();
    carried = carry(conn, run, carried, true);

    // An unknown answered by removing it: the run lost a row, so it is read whole.
    entries::upsert_entry(conn, &write(run, "known://later", "l", 5)).unwrap();
    entries::delete_entries(conn, run, &Selector::Path("unknown://why".into())).unwrap();
    carried = carry(conn, run, carried, false);
    assert!(carried.unknowns().is_empty());

    // A scheme registered brings its entries into the log without any entry written.
    entries::upsert_entry(conn, &write(run, "fresh://tool", "out", 5)).unwrap();
    carried = carry(conn, run, carried, true);
    let scheme = SchemeRow {
        name: "fresh".into(),
        model_visible: true,
        category: Category::Logging,
    };
    schemes::register_scheme(conn, &scheme).unwrap();
    entries::upsert_entry(conn, &write(run, "known://after", "a", 6)).unwrap();
    carried = carry(conn, run, carried, false);
    assert!(carried.history().iter().any(|row| row.tool == "fresh"));

    // A state carried for another run is not used.
    let elsewhere = CarriedState::read(conn, other, Some(carried)).unwrap();
    assert_eq!(parts(&elsewhere), whole(conn, other));
}

#[test]
fn the_target_is_the_one_the_log_view_gives() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn).id;
    let shapes = [
        json!({}),
        json!({"command": "ls -la"}),
        json!({"file": "a.rs", "command": "make"}),
        json!({"command": null, "file": "b.rs"}),
        json!({"path": "c.rs", "question": "why?"}),
        json!({"question": "what now?"}),
        json!({"path": 42}),
        json!({"file": {"name": "d.rs", "lines": [1, 2]}}),
        json!({"other": "ignored"}),
    ];
    for (index, attributes) in shapes.iter().enumerate() {
        let mut form = write(run, &format!("known://shape_{index}"), "body", 1);
        form.attributes = Some(attributes.clone());
        entries::upsert_entry(conn, &form).unwrap();
    }
    let view: Vec<String> = entries::run_log(conn, run)
        .unwrap()
        .into_iter()
        .map(|row| row.target)
        .collect();
    let ours: Vec<String> = shapes
        .iter()
        .map(|attributes| {
            let serde_json::Value::Object(map) = attributes.clone() else {
                unreachable!("every shape is an object")
            };
            target(&Attributes(map))
        })
        .collect();
    assert_eq!(ours, view);
}

fn changed(id: i64, path: &str, status: EntryStatus, registered: bool) -> ChangedEntry {
    ChangedEntry {
        id: EntryId(id),
        path: path.into(),
        body: format!("body of {path}"),
        scheme: crate::db::paths::scheme_of(path).map(str::to_owned),
        registered,
        status,
        attributes: Attributes(serde_json::Map::new()),
        turn: 1,
    }
}

#[test]
fn a_merge_replaces_inserts_in_id_order_and_drops_what_left() {
    let mut state = CarriedState {
        run: RunId(1),
        revision: 0,
        removed: 0,
        schemes: 3,
        rows: BTreeMap::new(),
    };
    let changes = |revision, entries| EntryChanges {
        revision,
        removed: 0,
        schemes: 3,
        entries,
    };
    state.merge(changes(
        3,
        vec![
            changed(1, "known://a", EntryStatus::Ok, true),
            changed(5, "known://c", EntryStatus::Ok, true),
            changed(7, "system://1", EntryStatus::Ok, true),
            changed(8, "sh://x", EntryStatus::Proposed, true),
        ],
    ));
    let paths = |state: &CarriedState| -> Vec<String> {
        state.history().into_iter().map(|row| row.path).collect()
    };
    assert_eq!(paths(&state), ["known://a", "known://c"]);
    assert_eq!(state.unresolved().len(), 1);
    let mut rewritten = changed(5, "known://c", EntryStatus::Ok, true);
    rewritten.body = "new".into();
    state.merge(changes(
        6,
        vec![
            changed(3, "known://b", EntryStatus::Ok, true),
            rewritten,
            changed(8, "sh://x", EntryStatus::Ok, true),
            changed(1, "app.js", EntryStatus::Ok, false),
        ],
    ));
    assert_eq!(paths(&state), ["known://b", "known://c", "sh://x"]);
    assert_eq!(state.history()[1].body, "new");
    assert!(state.unresolved().is_empty());
    assert_eq!(state.revision, 6);
}
