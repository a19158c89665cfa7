use crate::db::enums::{EntryStatus, Fidelity};
use crate::plugins::bundled::tools::testing::TestRun;

use super::destination_under;

#[test]
fn pattern_matches_land_under_the_destination() {
    assert_eq!(
        destination_under("known://plan_*", "known://plan_a", "known://archive"),
        "known://archive/plan_a"
    );
    assert_eq!(
        destination_under("src/**/*.js", "src/a/b.js", "backup/"),
        "backup/a/b.js"
    );
}

#[test]
fn entries_copy_and_move_now_with_globs_and_fidelity() {
    let mut run = TestRun::new();
    run.put("known://plan_a", "A");
    run.put("known://plan_b", "B");
    run.respond("<cp path=\"known://plan_*\" to=\"known://archive/\" fidelity=\"index\"/>");
    let copy = run.entry("known://archive/plan_a").unwrap();
    assert_eq!((copy.body.as_str(), copy.fidelity), ("A", Fidelity::Index));
    assert!(run.entry("known://plan_a").is_some());
    run.respond("<mv path=\"known://plan_b\" to=\"known://done/b\"/>");
    assert!(run.entry("known://plan_b").is_none());
    assert_eq!(run.entry("known://done/b").unwrap().body, "B");
    run.respond("<mv path=\"known://archive/*\" fidelity=\"archive\"/>");
    assert_eq!(
        run.entry("known://archive/plan_b").unwrap().fidelity,
        Fidelity::Archive
    );
    run.respond("<cp path=\"known://plan_a\" to=\"known://done/b\"/>");
    assert_eq!(
        run.attribute("cp://turn_4/known%3A//plan_a", "warning"),
        serde_json::json!("Overwrote existing entry at known://done/b")
    );
    assert_eq!(
        run.projected("mv://turn_2/known%3A//plan_b"),
        "# mv known://plan_b known://done/b"
    );
}

#[test]
fn file_destinations_are_proposals_and_bad_pairs_are_refused() {
    let mut run = TestRun::new();
    run.put("src/a.js", "a");
    run.put("known://x", "x");
    let outcome = run.respond("<mv path=\"src/a.js\" to=\"src/b.js\"/>");
    assert_eq!(outcome.proposals[0].path, "mv://turn_1/src/a.js");
    assert_eq!(
        run.attribute("mv://turn_1/src/a.js", "isMove"),
        serde_json::json!(true)
    );
    let refused = run.respond("<cp path=\"known://x\" to=\"notes.md\"/>");
    assert_eq!(refused.errors[0].status, EntryStatus::BadRequest);
    let escaping = run.respond("<cp path=\"src/a.js\" to=\"../b.js\"/>");
    assert!(escaping.errors[0].message.contains("leaves the project"));
    let no_destination = run.respond("<cp path=\"known://x\"/>");
    assert!(no_destination.errors[0].message.contains("to is required"));
}
