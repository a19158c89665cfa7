use serde_json::json;

use crate::db::enums::{EntryStatus, Fidelity};
use crate::plugins::bundled::tools::testing::TestRun;

#[test]
fn fidelity_control_keeps_summary_keywords_cut_to_80() {
    let mut run = TestRun::new();
    run.put("known://auth/a", "alpha");
    run.put("known://auth/b", "beta");
    let long = "k".repeat(100);
    run.respond(&format!(
        "<set path=\"known://auth/*\" fidelity=\"index\" summary=\"{long}\"/>"
    ));
    let entry = run.entry("known://auth/a").unwrap();
    assert_eq!(entry.fidelity, Fidelity::Index);
    assert_eq!(
        run.attribute("known://auth/b", "summary"),
        json!("k".repeat(80))
    );
    run.respond("<set path=\"known://auth/a\" fidelity=\"full\"/>");
    assert_eq!(
        run.attribute("known://auth/a", "summary"),
        json!("k".repeat(80))
    );
    let missing = run.respond("<set path=\"known://none\" fidelity=\"index\"/>");
    assert_eq!(missing.errors[0].status, EntryStatus::NotFound);
}

#[test]
fn entry_edits_apply_now_and_report_the_change() {
    let mut run = TestRun::new();
    run.respond("<known path=\"known://cfg\" summary=\"cfg\">port = 3000</known>");
    let outcome = run.respond("<set path=\"known://cfg\">s/3000/8080/</set>");
    assert!(outcome.errors.is_empty() && outcome.flags.has_act);
    assert_eq!(run.entry("known://cfg").unwrap().body, "port = 8080");
    assert_eq!(run.attribute("known://cfg", "summary"), json!("cfg"));
    let result = "set://turn_2/known%3A//cfg";
    let merge = run.attribute(result, "merge");
    assert!(merge.as_str().unwrap().contains("port = 8080"));
    assert!(run
        .projected(result)
        .starts_with("# set known://cfg 3→3 tokens\n<<<<<<< SEARCH"));
    let failed = run.respond("<set path=\"known://cfg\">s/nothing here/x/</set>");
    assert_eq!(failed.errors[0].status, EntryStatus::Conflict);
    assert_eq!(run.entry("known://cfg").unwrap().body, "port = 8080");
}

#[test]
fn file_edits_become_proposals_at_set_file() {
    let mut run = TestRun::new();
    run.put("src/app.js", "const port = 3000;\n");
    let outcome = run.respond(
        "<set path=\"src/app.js\">\n<<<<<<< SEARCH\nconst port = 3000;\n=======\nconst port = 8080;\n>>>>>>> REPLACE\n</set>",
    );
    assert_eq!(outcome.proposals.len(), 1);
    assert_eq!(outcome.proposals[0].path, "set://src/app.js");
    assert_eq!(
        run.entry("src/app.js").unwrap().body,
        "const port = 3000;\n"
    );
    assert!(run.entry("set://turn_1/src/app.js").is_none());
    let patch = run.attribute("set://src/app.js", "patch");
    assert!(patch.as_str().unwrap().contains("+const port = 8080;"));
    let broken = run.respond("<set path=\"src/app.js\">s/nope/x/</set>");
    assert_eq!(broken.errors[0].status, EntryStatus::Conflict);
}

#[test]
fn plain_writes_propose_files_and_upsert_entries() {
    let mut run = TestRun::new();
    let outcome = run.respond("<set path=\"src/new.js\">export {};</set>");
    let proposal = &outcome.proposals[0];
    assert_eq!(proposal.path, "set://turn_1/src/new.js");
    assert_eq!(
        run.attribute("set://turn_1/src/new.js", "file"),
        json!("src/new.js")
    );
    let merge = run.attribute("set://turn_1/src/new.js", "merge");
    assert_eq!(
        merge,
        json!("<<<<<<< SEARCH\n=======\nexport {};\n>>>>>>> REPLACE")
    );
    run.respond("<set path=\"known://note\" summary=\"n\">first</set>");
    run.respond("<set path=\"known://note\">second</set>");
    assert_eq!(run.entry("known://note").unwrap().body, "second");
    assert_eq!(run.attribute("known://note", "summary"), json!("n"));
    let empty = run.respond("<set path=\"known://note\"/>");
    assert_eq!(empty.errors[0].status, EntryStatus::BadRequest);
    assert_eq!(run.entry("known://note").unwrap().body, "second");
}

#[test]
fn preview_lists_targets_without_writing() {
    let mut run = TestRun::new();
    run.put("known://a", "alpha");
    let outcome = run.respond("<set path=\"known://*\" preview>zzz</set>");
    assert!(outcome.errors.is_empty());
    assert_eq!(run.entry("known://a").unwrap().body, "alpha");
}

#[test]
fn more_edits_of_the_same_file_join_its_proposal() {
    let mut run = TestRun::new();
    run.put("src/app.js", "const a = 1;\nconst b = 2;\n");
    run.put("src/other.js", "x");
    let outcome = run.respond(
        "<set path=\"src/app.js\">s/a = 1/a = 10/</set>\
         <set path=\"src/app.js\">s/b = 2/b = 20/</set>\
         <set path=\"src/app.js\">s/nowhere/x/</set>\
         <set path=\"src/other.js\">s/x/y/</set>",
    );
    assert_eq!(outcome.proposals.len(), 1);
    let merge = run.attribute("set://src/app.js", "merge");
    assert!(merge
        .as_str()
        .unwrap()
        .contains("const a = 10;\nconst b = 20;"));
    assert_eq!(
        run.status("set://turn_1/src/app.js_3"),
        Some(EntryStatus::Conflict)
    );
    assert_eq!(
        run.status("set://turn_1/src/other.js"),
        Some(EntryStatus::Conflict)
    );
    run.resolve(
        "set://src/app.js",
        crate::plugins::engine::resolve::Resolution::Accept,
        None,
    )
    .unwrap();
    assert_eq!(
        run.entry("src/app.js").unwrap().body,
        "const a = 10;\nconst b = 20;\n"
    );
}
