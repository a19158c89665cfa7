use super::*;
use crate::db::models::memory::{MemoryLayer, RecalledItem};
use crate::db::models::ProjectInsertForm;
use crate::db::queries::projects;
use crate::db::testing::TestDb;

mod cjk;

fn project(conn: &mut Conn, name: &str) -> ProjectId {
    projects::upsert_project(
        conn,
        &ProjectInsertForm {
            name: name.into(),
            project_root: Some(format!("/{name}")),
        },
    )
    .unwrap()
    .id
}

fn fact(project: Option<ProjectId>, topic: &str, body: &str) -> MemoryFactForm {
    MemoryFactForm {
        project_id: project,
        topic: topic.into(),
        body: body.into(),
        run_id: None,
        person: None,
        by_person: false,
        transient: false,
    }
}

/// Bounds no test here reaches.
const ROOMY: HistoryBounds = HistoryBounds {
    per_topic: 100,
    items: 1_000,
};

fn recalled(conn: &mut Conn, project: ProjectId, text: &str) -> Vec<(MemoryLayer, String)> {
    let mut items = recall_facts(conn, project, text, 10).unwrap();
    items.extend(recall_history(conn, project, text, 10).unwrap());
    items
        .into_iter()
        .map(|item| (item.layer, item.body))
        .collect()
}

/// [`fact`] as a person writes it.
fn persons(project: Option<ProjectId>, topic: &str, body: &str) -> MemoryFactForm {
    MemoryFactForm {
        person: Some("ada".into()),
        by_person: true,
        ..fact(project, topic, body)
    }
}

#[test]
fn a_person_s_fact_stays_until_a_person_changes_it() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    write_fact(conn, &fact(Some(p), "tests", "npm test"), ROOMY).unwrap();
    let (same, written) = write_fact(conn, &persons(Some(p), "tests", "npm test"), ROOMY).unwrap();
    assert_eq!(written, Written::Unchanged, "the text a person vouches for");
    assert!(same.by_person);
    assert!(list_history(conn, Some(p)).unwrap().is_empty());
    let (kept, written) = write_fact(conn, &fact(Some(p), "tests", "cargo test"), ROOMY).unwrap();
    assert_eq!(
        (kept.body.as_str(), written),
        ("npm test", Written::KeptPersons)
    );
    let (_, written) = write_fact(conn, &fact(Some(p), "tests", "npm test"), ROOMY).unwrap();
    assert_eq!(written, Written::Unchanged);
    assert_eq!(list_facts(conn, Some(p)).unwrap()[0].body, "npm test");
    assert!(list_history(conn, Some(p)).unwrap().is_empty());
    let (changed, written) =
        write_fact(conn, &persons(Some(p), "tests", "make check"), ROOMY).unwrap();
    assert_eq!(
        (changed.body.as_str(), written),
        ("make check", Written::Replaced)
    );
    assert_eq!(list_history(conn, Some(p)).unwrap()[0].body, "npm test");
    let (model, written) = write_fact(conn, &fact(Some(p), "style", "tabs"), ROOMY).unwrap();
    assert_eq!(written, Written::Created);
    assert!(!model.by_person);
    let (person, written) = write_fact(conn, &persons(Some(p), "style", "spaces"), ROOMY).unwrap();
    assert_eq!((person.by_person, written), (true, Written::Replaced));
}

#[test]
fn a_fact_on_a_known_topic_replaces_the_older_one_which_stays_in_the_history() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    let (first, written) =
        write_fact(conn, &fact(Some(p), "  Test  Command", "npm test"), ROOMY).unwrap();
    assert_eq!(
        (first.topic.as_str(), written),
        ("test command", Written::Created)
    );
    let (_, written) = write_fact(conn, &fact(Some(p), "test command", "npm test"), ROOMY).unwrap();
    assert_eq!(written, Written::Unchanged);
    assert!(list_history(conn, Some(p)).unwrap().is_empty());
    let (second, written) =
        write_fact(conn, &fact(Some(p), "TEST command", "make check"), ROOMY).unwrap();
    assert_eq!((second.id, written), (first.id, Written::Replaced));
    let facts = list_facts(conn, Some(p)).unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].body, "make check");
    let history = list_history(conn, Some(p)).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (
            history[0].topic.as_str(),
            history[0].body.as_str(),
            history[0].reason.as_str()
        ),
        ("test command", "npm test", "replaced")
    );
    assert_eq!(
        recalled(conn, p, "which test command?"),
        [
            (MemoryLayer::Project, "make check".to_string()),
            (MemoryLayer::History, "npm test".to_string())
        ]
    );
}

#[test]
fn recall_ranks_the_project_before_the_server_and_never_reaches_another_project() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (ours, theirs) = (project(conn, "ours"), project(conn, "theirs"));
    write_fact(
        conn,
        &fact(None, "style", "tabs for indentation everywhere"),
        ROOMY,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(Some(ours), "style", "spaces for indentation here"),
        ROOMY,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(Some(theirs), "secret", "indentation password hunter2"),
        ROOMY,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(Some(theirs), "secret", "indentation password swordfish"),
        ROOMY,
    )
    .unwrap();
    assert_eq!(
        recalled(conn, ours, "what indentation?"),
        [
            (
                MemoryLayer::Project,
                "spaces for indentation here".to_string()
            ),
            (
                MemoryLayer::Server,
                "tabs for indentation everywhere".to_string()
            ),
        ]
    );
    assert_eq!(recalled(conn, ours, "password").len(), 0);
    assert_eq!(recalled(conn, theirs, "password").len(), 2);
}

#[test]
fn erased_facts_and_history_are_not_recalled_and_only_their_layer_can_erase_them() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (ours, theirs) = (project(conn, "ours"), project(conn, "theirs"));
    let (kept, _) = write_fact(conn, &fact(Some(ours), "port", "listens on 8080"), ROOMY).unwrap();
    write_fact(conn, &fact(Some(ours), "port", "listens on 9090"), ROOMY).unwrap();
    assert!(!delete_fact(conn, Some(theirs), kept.id).unwrap());
    assert!(!delete_fact(conn, None, kept.id).unwrap());
    let old = list_history(conn, Some(ours)).unwrap()[0].id;
    assert!(!delete_history(conn, Some(theirs), old).unwrap());
    assert_eq!(recalled(conn, ours, "listens").len(), 2);
    assert!(delete_history(conn, Some(ours), old).unwrap());
    assert!(delete_fact(conn, Some(ours), kept.id).unwrap());
    assert!(get_fact(conn, Some(ours), kept.id).unwrap().is_none());
    assert!(recalled(conn, ours, "listens").is_empty());
}

#[test]
fn the_switch_is_stored_per_project() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (ours, theirs) = (project(conn, "ours"), project(conn, "theirs"));
    assert!(is_enabled(conn, ours).unwrap());
    set_enabled(conn, ours, false, Some("ada")).unwrap();
    set_enabled(conn, ours, false, None).unwrap();
    assert!(!is_enabled(conn, ours).unwrap());
    assert!(is_enabled(conn, theirs).unwrap());
    let mut again = db.connect();
    assert!(!is_enabled(&mut again, ours).unwrap());
    set_enabled(&mut again, ours, true, None).unwrap();
    assert!(is_enabled(&mut again, ours).unwrap());
}

#[test]
fn a_query_is_its_distinct_words_and_only_the_rarest_are_searched_for() {
    assert_eq!(
        query_words("Run the TESTS, run the tests: \"npm\" ok?"),
        ["run", "the", "tests", "npm"]
    );
    assert!(query_words("a b c !!").is_empty());
    let many: String = (0..100).map(|n| format!("word{n} ")).collect();
    assert_eq!(query_words(&many).len(), words::MAX_QUERY_WORDS);

    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    let common = usize::try_from(recall::MAX_POSTINGS).unwrap() + 1;
    conn.transaction::<_, DbError, _>(|conn| {
        for n in 0..common {
            write_fact(
                conn,
                &fact(Some(p), &format!("t{n}"), "common words everywhere"),
                ROOMY,
            )?;
        }
        write_fact(
            conn,
            &fact(Some(p), "rare", "common words and a zebra"),
            ROOMY,
        )?;
        Ok(())
    })
    .unwrap();
    let found = recall_facts(conn, p, "common zebra", 5).unwrap();
    assert_eq!(found.len(), 1, "the common word is not searched for");
    assert_eq!(found[0].topic, "rare");
    assert!(recall_facts(conn, p, "common everywhere", 5)
        .unwrap()
        .is_empty());
    assert_eq!(recall_facts(conn, p, "Zebra", 5).unwrap().len(), 1);
}

#[test]
fn recall_ranks_a_topic_over_a_body_and_a_rare_word_over_a_common_one_on_either_backend() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    write_fact(conn, &fact(Some(p), "notes", "deploy with care"), ROOMY).unwrap();
    write_fact(conn, &fact(Some(p), "deploy", "ansible playbook"), ROOMY).unwrap();
    let topics = |items: Vec<RecalledItem>| -> Vec<String> {
        items.into_iter().map(|item| item.topic).collect()
    };
    assert_eq!(
        topics(recall_facts(conn, p, "deploy", 5).unwrap()),
        ["deploy", "notes"]
    );

    for n in 0..5 {
        write_fact(
            conn,
            &fact(Some(p), &format!("filler {n}"), "common filler"),
            ROOMY,
        )
        .unwrap();
    }
    write_fact(conn, &fact(Some(p), "one", "common word"), ROOMY).unwrap();
    write_fact(conn, &fact(Some(p), "two", "zebra word"), ROOMY).unwrap();
    let found = topics(recall_facts(conn, p, "zebra common", 2).unwrap());
    assert_eq!(found, ["two", "one"], "the rarer word first");
}

#[test]
fn punctuation_separates_the_words_a_fact_is_recalled_by() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    write_fact(
        conn,
        &fact(
            Some(p),
            "schema_file",
            "see src/db/schema.rs and user@example.org",
        ),
        ROOMY,
    )
    .unwrap();
    for word in ["schema", "file", "example", "user"] {
        assert_eq!(recall_facts(conn, p, word, 5).unwrap().len(), 1, "{word}");
    }
}

#[test]
fn a_runs_narrative_replaces_its_earlier_one_and_is_recalled_as_a_narrative_on_either_backend() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = crate::db::testing::project_with_run(conn, Some("/p".into())).unwrap();
    let p = run.project_id;
    write_fact(conn, &fact(Some(p), "build", "cargo build"), ROOMY).unwrap();
    write_fact(
        conn,
        &fact(Some(p), "build", "cargo build --release"),
        ROOMY,
    )
    .unwrap();
    record_narrative(
        conn,
        p,
        run.id,
        "Session: Parser",
        "first attempt at the parser",
        ROOMY,
    )
    .unwrap();
    record_narrative(conn, p, run.id, "Session: Parser", "parser finished", ROOMY).unwrap();
    let history = list_history(conn, Some(p)).unwrap();
    let kept: Vec<(&str, &str, &str)> = history
        .iter()
        .map(|item| {
            (
                item.reason.as_str(),
                item.topic.as_str(),
                item.body.as_str(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            ("narrative", "session: parser", "parser finished"),
            ("replaced", "build", "cargo build"),
        ],
        "one narrative per run, its latest, beside the replaced fact"
    );
    let mut history: Vec<(MemoryLayer, String)> = recall_history(conn, p, "parser build", 10)
        .unwrap()
        .into_iter()
        .map(|item| (item.layer, item.body))
        .collect();
    history.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        history,
        [
            (MemoryLayer::History, "cargo build".to_owned()),
            (MemoryLayer::Narrative, "parser finished".to_owned()),
        ]
    );
}

/// On PostgreSQL, the word and item counts the triggers keep that differ from a count of
/// the items' `search` words (none on SQLite, whose FTS5 tables count for themselves).
fn miscounted_words(conn: &mut Conn) -> i64 {
    #[derive(QueryableByName)]
    struct Miscounted {
        #[diesel(sql_type = BigInt)]
        words: i64,
    }
    if let Conn::Sqlite(_) = conn {
        return 0;
    }
    let counted: Miscounted = diesel::sql_query(
        "SELECT count(*) AS words FROM ( \
             SELECT 'memory_facts' AS source, w AS word, count(*) AS items \
             FROM memory_facts, unnest(tsvector_to_array(search)) AS w GROUP BY w \
             UNION ALL \
             SELECT 'memory_history', w, count(*) \
             FROM memory_history, unnest(tsvector_to_array(search)) AS w GROUP BY w \
             UNION ALL \
             SELECT 'memory_facts', NULL, count(*) FROM memory_facts \
             UNION ALL \
             SELECT 'memory_history', NULL, count(*) FROM memory_history) AS truth \
         FULL JOIN (SELECT source, word, items FROM memory_word_counts \
                    UNION ALL \
                    SELECT source, NULL, items FROM memory_item_counts) AS kept \
              ON kept.source = truth.source AND kept.word IS NOT DISTINCT FROM truth.word \
         WHERE kept.items IS DISTINCT FROM truth.items",
    )
    .get_result(conn)
    .unwrap();
    counted.words
}

#[test]
fn a_words_rarity_follows_every_write_of_any_project_on_either_backend() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (ours, theirs) = (project(conn, "ours"), project(conn, "theirs"));
    let top = |conn: &mut Conn| {
        recall_facts(conn, ours, "zebra yak", 1).unwrap()[0]
            .body
            .clone()
    };
    write_fact(conn, &fact(Some(ours), "one", "zebra"), ROOMY).unwrap();
    for n in 0..3 {
        write_fact(conn, &fact(Some(ours), &format!("y{n}"), "yak"), ROOMY).unwrap();
    }
    assert_eq!(top(conn), "zebra", "zebra is the rarer word");

    for n in 0..4 {
        write_fact(conn, &fact(Some(theirs), &format!("z{n}"), "zebra"), ROOMY).unwrap();
    }
    assert_eq!(top(conn), "yak", "another project's facts count");
    assert_eq!(miscounted_words(conn), 0);

    statement("DELETE FROM projects WHERE id = ?")
        .bind::<BigInt, _>(theirs.0)
        .execute(conn)
        .unwrap();
    assert_eq!(
        top(conn),
        "zebra",
        "an erased project's facts no longer count"
    );

    for n in 0..2 {
        write_fact(conn, &fact(Some(ours), &format!("y{n}"), "zebra"), ROOMY).unwrap();
    }
    assert_eq!(
        top(conn),
        "yak",
        "a replaced body no longer counts, its new one does"
    );
    assert_eq!(miscounted_words(conn), 0);

    let replaced = list_history(conn, Some(ours)).unwrap()[0].id;
    assert!(delete_history(conn, Some(ours), replaced).unwrap());
    let one = list_facts(conn, Some(ours))
        .unwrap()
        .into_iter()
        .find(|fact| fact.topic == "one")
        .unwrap();
    assert!(delete_fact(conn, Some(ours), one.id).unwrap());
    assert_eq!(miscounted_words(conn), 0);
}
