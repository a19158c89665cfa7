use serde_json::json;

use super::*;
use crate::db::enums::EntryStatus;
use crate::db::ids::LoopId;
use crate::db::queries::entry_moves::{copy_entry, EntryTransfer};
use crate::db::testing::{project_with_run, sample_run, write, TestDb};

fn pattern(path: &str) -> Selector {
    Selector::Pattern {
        path: path.into(),
        body: None,
    }
}

fn paths(rows: &[EntryRow]) -> Vec<&str> {
    rows.iter().map(|row| row.path.as_str()).collect()
}

#[test]
fn a_new_entry_gets_the_defaults() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let entry = upsert_entry(&mut db.conn, &write(run.id, "src/app.js", "abcdefgh", 1)).unwrap();
    assert_eq!(entry.scheme, None);
    assert_eq!(entry.fidelity, Fidelity::Full);
    assert_eq!(entry.attributes.to_value(), json!({}));
    assert_eq!(
        (entry.tokens, entry.tokens_full, entry.write_count),
        (2, 2, 1)
    );
}

#[test]
fn upsert_keeps_attributes_fidelity_and_hash_unless_given() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let mut first = write(run.id, "known://plan", "step one", 1);
    first.attributes = Some(json!({"summary": "plan", "mode": "x", "drop": null}));
    first.fidelity = Some(Fidelity::Summary);
    first.hash = Some("h1".into());
    let created = upsert_entry(conn, &first).unwrap();
    assert_eq!(
        created.attributes.to_value(),
        json!({"summary": "plan", "mode": "x"})
    );

    let rewritten = upsert_entry(conn, &write(run.id, "known://plan", "step two", 2)).unwrap();
    assert_eq!(rewritten.id, created.id);
    assert_eq!(rewritten.body, "step two");
    assert_eq!(rewritten.attributes, created.attributes);
    assert_eq!(
        (rewritten.fidelity, rewritten.hash.as_deref()),
        (Fidelity::Summary, Some("h1"))
    );
    assert_eq!((rewritten.turn, rewritten.write_count), (2, 2));

    let mut patch = write(run.id, "known://plan", "step two", 3);
    patch.attributes = Some(json!({"mode": null, "path": "a"}));
    patch.fidelity = Some(Fidelity::Full);
    let merged = upsert_entry(conn, &patch).unwrap();
    assert_eq!(
        merged.attributes.to_value(),
        json!({"summary": "plan", "path": "a"})
    );
    assert_eq!(merged.fidelity, Fidelity::Full);

    patch.attributes = Some(json!("not an object"));
    assert!(matches!(
        upsert_entry(conn, &patch),
        Err(DbError::Invalid(_))
    ));
}

#[test]
fn paths_are_normalised_on_write_and_read() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let entry = upsert_entry(
        &mut db.conn,
        &write(run.id, "KNOWN://deploy target", "eu", 1),
    )
    .unwrap();
    assert_eq!(entry.path, "known://deploy%20target");
    assert_eq!(entry.scheme.as_deref(), Some("known"));
    let found = get_entry(&mut db.conn, run.id, "known://deploy%20target").unwrap();
    assert_eq!(found.map(|row| row.id), Some(entry.id));
    assert_eq!(
        get_entry(&mut db.conn, run.id, "known://other").unwrap(),
        None
    );
}

#[test]
fn tokens_follow_fidelity() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let mut entry = write(run.id, "known://k", &"x".repeat(400), 1);
    entry.attributes = Some(json!({"summary": "12345678"}));
    let full = upsert_entry(conn, &entry).unwrap();
    assert_eq!((full.tokens, full.tokens_full), (100, 100));
    let selector = Selector::Path("known://k".into());
    set_fidelity(conn, run.id, &selector, Fidelity::Summary).unwrap();
    let summary = get_entry(conn, run.id, "known://k").unwrap().unwrap();
    assert_eq!(
        (summary.tokens, summary.tokens_full, summary.turn),
        (2, 100, 1)
    );
    update_attributes(conn, run.id, "known://k", &json!({"summary": null})).unwrap();
    assert_eq!(
        get_entry(conn, run.id, "known://k")
            .unwrap()
            .unwrap()
            .tokens,
        20
    );
    demote(conn, run.id, &selector).unwrap();
    let archived = get_entry(conn, run.id, "known://k").unwrap().unwrap();
    assert_eq!(
        (archived.fidelity, archived.tokens, archived.tokens_full),
        (Fidelity::Archive, 0, 100)
    );
    assert_eq!(promote(conn, run.id, &selector, 7).unwrap(), ["known://k"]);
    let promoted = get_entry(conn, run.id, "known://k").unwrap().unwrap();
    assert_eq!(
        (promoted.fidelity, promoted.tokens, promoted.turn),
        (Fidelity::Full, 100, 7)
    );
}

#[test]
fn patterns_select_by_path_and_body() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    for (path, body) in [
        ("app.js", "// TODO fix"),
        ("src/util.js", "ok"),
        ("known://b", "TODO later"),
        ("known://a/deep", "fine"),
        ("unknown://why", "?"),
    ] {
        upsert_entry(conn, &write(run.id, path, body, 1)).unwrap();
    }
    let all = list_entries(conn, run.id, &pattern("**"), None, None).unwrap();
    assert_eq!(
        paths(&all),
        [
            "app.js",
            "known://a/deep",
            "known://b",
            "src/util.js",
            "unknown://why"
        ]
    );
    assert_eq!(
        paths(&list_entries(conn, run.id, &pattern("*"), None, None).unwrap()),
        ["app.js"]
    );
    let known = list_entries(conn, run.id, &pattern("known://*"), None, None).unwrap();
    assert_eq!(paths(&known), ["known://a/deep", "known://b"]);
    let todo = Selector::Pattern {
        path: "**".into(),
        body: Some("TODO".into()),
    };
    assert_eq!(
        paths(&list_entries(conn, run.id, &todo, None, None).unwrap()),
        ["app.js", "known://b"]
    );
    assert_eq!(
        paths(&list_entries(conn, run.id, &pattern("**"), Some(2), Some(1)).unwrap()),
        ["known://a/deep", "known://b"]
    );
    assert_eq!(
        paths(&list_entries(conn, run.id, &pattern("app.js"), None, None).unwrap()),
        ["app.js"]
    );

    assert_eq!(
        delete_entries(conn, run.id, &pattern("known://*")).unwrap(),
        ["known://b", "known://a/deep"]
    );
    assert_eq!(
        list_entries(conn, run.id, &pattern("**"), None, None)
            .unwrap()
            .len(),
        3
    );
    assert!(delete_entries(conn, run.id, &pattern("nothing"))
        .unwrap()
        .is_empty());
}

#[test]
fn resolve_and_proposals() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let mut proposal = write(run.id, "sh://turn_1/npm test", "npm test", 1);
    proposal.status = EntryStatus::Proposed;
    proposal.attributes = Some(json!({"command": "npm test"}));
    upsert_entry(conn, &proposal).unwrap();
    let pending = unresolved(conn, run.id).unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|row| row.path.as_str())
            .collect::<Vec<_>>(),
        ["sh://turn_1/npm%20test"]
    );
    assert!(run_log(conn, run.id).unwrap().is_empty());
    assert_eq!(run_history(conn, run.id).unwrap().len(), 1);

    let resolved = resolve_entry(
        conn,
        run.id,
        "sh://turn_1/npm%20test",
        EntryStatus::Ok,
        Some("ok\n"),
    )
    .unwrap();
    assert_eq!(
        (resolved.status, resolved.body.as_str()),
        (EntryStatus::Ok, "ok\n")
    );
    assert!(unresolved(conn, run.id).unwrap().is_empty());
    let log = run_log(conn, run.id).unwrap();
    let first = log.first().unwrap();
    assert_eq!(
        (first.tool.as_str(), first.target.as_str()),
        ("sh", "npm test")
    );
    let rejected = resolve_entry(
        conn,
        run.id,
        "sh://turn_1/npm test",
        EntryStatus::Forbidden,
        None,
    )
    .unwrap();
    assert_eq!(
        (rejected.status, rejected.body.as_str()),
        (EntryStatus::Forbidden, "ok\n")
    );
    assert!(matches!(
        resolve_entry(conn, run.id, "sh://nope", EntryStatus::Ok, None),
        Err(DbError::NotFound(_))
    ));
    assert!(matches!(
        update_attributes(conn, run.id, "sh://nope", &json!({})),
        Err(DbError::NotFound(_))
    ));
}

#[test]
fn history_and_scheme_listings_skip_audit_and_files() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    for (path, turn) in [
        ("prompt://1", 1),
        ("system://1", 1),
        ("app.js", 1),
        ("content://1", 1),
        ("prompt://2", 2),
    ] {
        upsert_entry(conn, &write(run.id, path, path, turn)).unwrap();
    }
    let history = run_history(conn, run.id).unwrap();
    assert_eq!(paths(&history), ["prompt://1", "prompt://2"]);
    assert_eq!(
        latest_entry_of_scheme(conn, run.id, "prompt")
            .unwrap()
            .map(|row| row.path),
        Some("prompt://2".into())
    );
    assert_eq!(
        paths(&entries_of_scheme(conn, run.id, "content").unwrap()),
        ["content://1"]
    );
    let log = run_log(conn, run.id).unwrap();
    assert_eq!(
        log.iter().map(|row| row.tool.as_str()).collect::<Vec<_>>(),
        ["prompt", "prompt"]
    );
}

#[test]
fn copy_and_move_within_a_run() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let mut source = write(run.id, "known://a", "alpha", 1);
    source.attributes = Some(json!({"summary": "a"}));
    upsert_entry(conn, &source).unwrap();
    upsert_entry(conn, &write(run.id, "known://b", "old", 1)).unwrap();
    let transfer = |from: &str, to: &str| EntryTransfer {
        run_id: run.id,
        from: from.into(),
        to: to.into(),
        loop_id: None,
        turn: 2,
    };
    let copy = copy_entry(conn, &transfer("known://a", "known://b")).unwrap();
    assert_eq!(
        (copy.body.as_str(), copy.turn, copy.write_count),
        ("alpha", 2, 2)
    );
    assert_eq!(copy.attributes.to_value(), json!({"summary": "a"}));
    assert!(matches!(
        copy_entry(conn, &transfer("known://zz", "known://y")),
        Err(DbError::NotFound(_))
    ));
}

#[test]
fn free_path_appends_the_first_unused_suffix() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    assert_eq!(
        free_path(conn, run.id, "known://a b").unwrap(),
        "known://a%20b"
    );
    upsert_entry(conn, &write(run.id, "known://a b", "1", 1)).unwrap();
    assert_eq!(
        free_path(conn, run.id, "known://a b").unwrap(),
        "known://a%20b_2"
    );
    upsert_entry(conn, &write(run.id, "known://a%20b_2", "2", 1)).unwrap();
    assert_eq!(
        free_path(conn, run.id, "known://a b").unwrap(),
        "known://a%20b_3"
    );
}

#[test]
fn free_path_fills_the_first_gap_and_ignores_longer_names() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    for path in [
        "get://t/a",
        "get://t/a_2",
        "get://t/a_4",
        "get://t/a_b",
        "get://t/a_3x",
        "get://t/ab",
    ] {
        upsert_entry(conn, &write(run.id, path, "x", 1)).unwrap();
    }
    assert_eq!(free_path(conn, run.id, "get://t/a").unwrap(), "get://t/a_3");
    upsert_entry(conn, &write(run.id, "get://t/a_3", "x", 1)).unwrap();
    assert_eq!(free_path(conn, run.id, "get://t/a").unwrap(), "get://t/a_5");
}

#[test]
fn only_plain_scheme_prefixes_narrow_a_pattern() {
    use super::literal_scheme;
    assert_eq!(literal_scheme("known://*"), Some("known"));
    assert_eq!(literal_scheme("ask_user://turn_1/*"), Some("ask_user"));
    assert_eq!(literal_scheme("**"), None);
    assert_eq!(literal_scheme("/known://.*/"), None);
    assert_eq!(literal_scheme("s/known:///x/"), None);
    assert_eq!(literal_scheme("*://x"), None);
    assert_eq!(literal_scheme("//item"), None);
}

#[test]
fn patterns_match_stored_paths_whatever_characters_their_urls_hold() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let urls = [
        "http://127.0.0.1:8080/page/one",
        "https://example.com/search?q=a&lang=en",
        "https://user@example.com/inbox",
        "known://deploy target",
        "known://100%",
    ];
    for url in urls {
        upsert_entry(&mut db.conn, &write(run.id, url, "body", 1)).unwrap();
    }
    upsert_entry(&mut db.conn, &write(run.id, "src/a file.rs", "body", 1)).unwrap();
    let mut found = |path: &str| {
        let rows = list_entries(&mut db.conn, run.id, &pattern(path), None, None).unwrap();
        rows.into_iter().map(|row| row.path).collect::<Vec<_>>()
    };
    for (written, expected) in [
        (
            "http://127.0.0.1:8080/page/*",
            "http://127.0.0.1%3A8080/page/one",
        ),
        (
            "http://127.0.0.1%3A8080/page/*",
            "http://127.0.0.1%3A8080/page/one",
        ),
        (
            "https://example.com/search?q=a&lang=*",
            "https://example.com/search%3Fq%3Da%26lang%3Den",
        ),
        (
            "https://user@example.com/*",
            "https://user%40example.com/inbox",
        ),
        ("known://deploy t*", "known://deploy%20target"),
        ("known://deploy target", "known://deploy%20target"),
        ("known://100%*", "known://100%25"),
        ("/127\\.0\\.0\\.1:8080/", "http://127.0.0.1%3A8080/page/one"),
    ] {
        assert_eq!(found(written), [expected], "{written}");
    }
    assert_eq!(
        found("src/a *"),
        ["src/a file.rs"],
        "a bare path is as it is"
    );
    assert_eq!(found("http://127.0.0.1:9090/*"), Vec::<String>::new());
}

#[test]
fn source_files_at_summary_without_an_outline_are_outlined_once_per_content() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    for (path, fidelity) in [
        ("src/a.rs", Fidelity::Summary),
        ("src/b.rs", Fidelity::Index),
        ("notes.md", Fidelity::Summary),
        ("known://fact", Fidelity::Summary),
    ] {
        let mut file = write(run.id, path, "fn a() {}", 1);
        file.fidelity = Some(fidelity);
        file.hash = Some("h1".into());
        upsert_entry(conn, &file).unwrap();
    }
    let source = |path: &str| path.ends_with(".rs");
    let pending = unoutlined_summaries(conn, run.id, source).unwrap();
    assert_eq!(paths(&pending), ["src/a.rs"]);

    set_symbols(conn, run.id, "src/a.rs", Some("h0"), "1 function old").unwrap();
    let stale = get_entry(conn, run.id, "src/a.rs").unwrap().unwrap();
    assert_eq!(
        stale.attributes.to_value(),
        json!({}),
        "made from other content"
    );
    set_symbols(conn, run.id, "src/a.rs", Some("h1"), "").unwrap();
    assert!(unoutlined_summaries(conn, run.id, source)
        .unwrap()
        .is_empty());

    let mut changed = write(run.id, "src/a.rs", "fn b() {}", 2);
    changed.hash = Some("h2".into());
    changed.attributes = Some(json!({"symbols": null}));
    upsert_entry(conn, &changed).unwrap();
    let pending = unoutlined_summaries(conn, run.id, source).unwrap();
    assert_eq!(
        paths(&pending),
        ["src/a.rs"],
        "a changed file is outlined again"
    );
}

#[test]
fn a_corrupt_attributes_column_is_an_error_naming_its_row() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let entry = upsert_entry(&mut db.conn, &write(run.id, "notes.md", "n", 1)).unwrap();
    let bypass = match db.conn {
        Conn::Sqlite(_) => "PRAGMA ignore_check_constraints = ON",
        Conn::Postgres(_) => {
            "ALTER TABLE known_entries DROP CONSTRAINT known_entries_attributes_check"
        }
    };
    diesel::sql_query(bypass).execute(&mut db.conn).unwrap();
    for corrupt in ["{\"summary\": ", "[1]"] {
        diesel::update(known_entries::table.find(entry.id))
            .set(known_entries::attributes.eq(corrupt))
            .execute(&mut db.conn)
            .unwrap();
        let error = get_entry(&mut db.conn, run.id, "notes.md").unwrap_err();
        let DbError::Corrupt(ref corrupt_json) = error else {
            panic!("{error:?}");
        };
        assert_eq!(
            (corrupt_json.column, corrupt_json.row),
            ("attributes", Some(entry.id.0))
        );
        let message = error.to_string();
        assert!(
            message.contains(&format!("column attributes of row {}", entry.id)),
            "{message}"
        );
        let listed = list_entries(&mut db.conn, run.id, &pattern("*.md"), None, None);
        assert!(matches!(listed, Err(DbError::Corrupt(_))), "{listed:?}");
    }
}

/// What an entry holds, but for its id, run and times.
fn held(row: &EntryRow) -> (Option<LoopId>, i32, &str, &str, EntryStatus, Fidelity) {
    (
        row.loop_id,
        row.turn,
        row.body.as_str(),
        row.hash.as_deref().unwrap_or(""),
        row.status,
        row.fidelity,
    )
}

#[test]
fn archived_copies_in_one_statement_are_what_each_written_alone_would_be() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (alone, together) = (sample_run(conn).id, sample_run(conn).id);
    for run in [alone, together] {
        let mut earlier = write(run, "user://1", "before", 1);
        earlier.attributes = Some(json!({"kept": true}));
        earlier.hash = Some("h".into());
        upsert_entry(conn, &earlier).unwrap();
    }
    let copies: Vec<(String, String)> = (0..8)
        .map(|n| (format!("user://{n}"), format!("copy {n}")))
        .collect();
    for (path, body) in &copies {
        let form = EntryUpsertForm {
            fidelity: Some(Fidelity::Archive),
            ..EntryUpsertForm::new(alone, None, 3, path.clone(), body.clone())
        };
        write_entry(conn, &form).unwrap();
    }
    write_archived(conn, together, None, 3, &copies).unwrap();
    for (path, _) in &copies {
        let one = get_entry(conn, alone, path).unwrap().unwrap();
        let other = get_entry(conn, together, path).unwrap().unwrap();
        assert_eq!(held(&one), held(&other), "{path}");
        assert_eq!(
            (one.attributes.to_value(), one.write_count, one.tokens),
            (other.attributes.to_value(), other.write_count, other.tokens),
            "{path}"
        );
    }
    let rewritten = get_entry(conn, together, "user://1").unwrap().unwrap();
    assert_eq!(rewritten.write_count, 2);
    assert_eq!(rewritten.attributes.to_value(), json!({"kept": true}));
}

#[test]
fn the_latest_log_entries_are_the_log_s_last_oldest_first() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let other = project_with_run(conn, Some("/q".into())).unwrap();
    for turn in 1..=6 {
        upsert_entry(
            conn,
            &write(run.id, &format!("known://{turn}"), "fact", turn),
        )
        .unwrap();
        upsert_entry(
            conn,
            &write(run.id, &format!("system://{turn}"), "audit", turn),
        )
        .unwrap();
        let mut proposal = write(run.id, &format!("sh://turn_{turn}/ls"), "ls", turn);
        proposal.status = EntryStatus::Proposed;
        upsert_entry(conn, &proposal).unwrap();
        upsert_entry(
            conn,
            &write(other.id, &format!("known://{turn}"), "x", turn),
        )
        .unwrap();
    }
    resolve_entry(conn, run.id, "sh://turn_2/ls", EntryStatus::Ok, None).unwrap();

    let whole = run_log(conn, run.id).unwrap();
    assert_eq!(whole.len(), 7, "six facts and the accepted command");
    let paths = |rows: &[RunLogRow]| rows.iter().map(|row| row.path.clone()).collect::<Vec<_>>();
    assert_eq!(
        paths(&latest_run_log(conn, run.id, 3).unwrap()),
        paths(&whole[4..]),
        "the last three, oldest first: no audit copy, pending proposal or other run's entry"
    );
    assert_eq!(
        paths(&latest_run_log(conn, run.id, 40).unwrap()),
        paths(&whole)
    );
}
