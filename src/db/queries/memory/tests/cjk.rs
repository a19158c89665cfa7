//! Recall in Chinese and Japanese, on either backend: a question finds the facts (and the
//! history) sharing its pairs of characters, the indexes follow every write, and the
//! migration that brought it indexes what was kept before.

use super::*;

/// How many facts hold `word` in their index, counted as recall counts.
fn facts_holding(conn: &mut Conn, word: &str) -> i64 {
    #[derive(QueryableByName)]
    struct Holding {
        #[diesel(sql_type = BigInt)]
        facts: i64,
    }
    let sql = match conn {
        Conn::Sqlite(_) => {
            "SELECT count(*) AS facts FROM memory_facts_fts WHERE memory_facts_fts MATCH '\"' || ? || '\"'"
        }
        Conn::Postgres(_) => {
            "SELECT count(*) AS facts FROM memory_facts WHERE search @@ to_tsquery('simple', ?)"
        }
    };
    let holding: Holding = statement(sql)
        .bind::<Text, _>(word)
        .get_result(conn)
        .unwrap();
    holding.facts
}

#[test]
fn a_chinese_or_japanese_question_recalls_the_facts_sharing_its_pairs_of_characters_on_either_backend(
) {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    let topics = |items: Vec<RecalledItem>| -> Vec<String> {
        items.into_iter().map(|item| item.topic).collect()
    };
    write_fact(
        conn,
        &fact(Some(p), "数据库备份", "每天凌晨三点用pg_dump备份数据库。"),
        ROOMY,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(Some(p), "デプロイ手順", "本番へのデプロイはmakeで行う。"),
        ROOMY,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(
            Some(p),
            "语言",
            "服务端用Rust。客户端用TypeScript，测试用Python。",
        ),
        ROOMY,
    )
    .unwrap();
    write_fact(conn, &fact(Some(p), "tests", "cargo test runs them"), ROOMY).unwrap();

    assert_eq!(
        topics(recall_facts(conn, p, "数据库怎么备份？", 5).unwrap()),
        ["数据库备份"]
    );
    assert_eq!(
        topics(recall_facts(conn, p, "本番のデプロイ方法は？", 5).unwrap()),
        ["デプロイ手順"]
    );
    assert_eq!(
        topics(recall_facts(conn, p, "デプロイ", 5).unwrap()),
        ["デプロイ手順"]
    );
    for latin in ["rust", "TypeScript", "python", "make", "dump"] {
        assert_eq!(recall_facts(conn, p, latin, 5).unwrap().len(), 1, "{latin}");
    }
    assert!(
        recall_facts(conn, p, "明天下雨吗？", 5).unwrap().is_empty(),
        "no pair in common"
    );

    write_fact(
        conn,
        &fact(Some(p), "数据库备份", "每小时备份一次。"),
        ROOMY,
    )
    .unwrap();
    let history: Vec<String> = recall_history(conn, p, "凌晨", 5)
        .unwrap()
        .into_iter()
        .map(|item| item.body)
        .collect();
    assert_eq!(
        history,
        ["每天凌晨三点用pg_dump备份数据库。"],
        "the replaced body"
    );
    assert_eq!(
        facts_holding(conn, "凌晨"),
        0,
        "the replaced body left the index"
    );
    assert_eq!(facts_holding(conn, "小时"), 1);
    let gone = list_facts(conn, Some(p))
        .unwrap()
        .into_iter()
        .find(|fact| fact.topic == "デプロイ手順")
        .unwrap();
    assert!(delete_fact(conn, Some(p), gone.id).unwrap());
    assert_eq!(
        facts_holding(conn, "デプ"),
        0,
        "an erased fact left the index"
    );
    assert!(recall_facts(conn, p, "デプロイ", 5).unwrap().is_empty());
    assert_eq!(miscounted_words(conn), 0);
}

#[test]
fn facts_kept_before_cjk_recall_are_indexed_anew_by_its_migration_on_either_backend() {
    use crate::db::connection::{run_migrations, POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
    use diesel_migrations::MigrationHarness;
    const CJK_RECALL: &str = "20261207000000";
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = project(conn, "p");
    let applied = |conn: &mut Conn| -> Vec<String> {
        let versions = match conn {
            Conn::Sqlite(conn) => conn.applied_migrations(),
            Conn::Postgres(conn) => conn.applied_migrations(),
        };
        versions.unwrap().iter().map(ToString::to_string).collect()
    };
    while applied(conn)
        .iter()
        .any(|version| version.as_str() >= CJK_RECALL)
    {
        match conn {
            Conn::Sqlite(conn) => conn.revert_last_migration(SQLITE_MIGRATIONS),
            Conn::Postgres(conn) => conn.revert_last_migration(POSTGRES_MIGRATIONS),
        }
        .unwrap();
    }
    write_fact(
        conn,
        &fact(Some(p), "数据库备份", "每天凌晨备份数据库。"),
        ROOMY,
    )
    .unwrap();
    write_fact(conn, &fact(Some(p), "数据库备份", "每小时备份。"), ROOMY).unwrap();
    assert!(
        recall_facts(conn, p, "数据库", 5).unwrap().is_empty(),
        "before: one word"
    );
    run_migrations(conn).unwrap();
    assert_eq!(recall_facts(conn, p, "数据库", 5).unwrap().len(), 1);
    assert_eq!(recall_history(conn, p, "凌晨", 5).unwrap().len(), 1);
    assert_eq!(miscounted_words(conn), 0);
}
