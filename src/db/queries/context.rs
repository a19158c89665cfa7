//! The model's view of a run (`v_model_context`); the per-turn snapshot of what it saw is
//! [`super::snapshot`].

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable};

use crate::db::ids::RunId;
use crate::db::models::entry::ModelContextRow;
use crate::db::DbError;

/// The rows the model can see, in context order.
pub(crate) fn model_context(
    conn: &mut Conn,
    run_id: RunId,
) -> Result<Vec<ModelContextRow>, DbError> {
    Ok(
        statement("SELECT * FROM v_model_context WHERE run_id = ? ORDER BY ordinal")
            .bind::<BigInt, _>(run_id)
            .load(conn)?,
    )
}

/// The display tokens of the run's entries the model can see.
pub(crate) fn visible_tokens(conn: &mut Conn, run_id: RunId) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Total {
        #[diesel(sql_type = Nullable<BigInt>)]
        tokens: Option<i64>,
    }
    let total: Total = statement(
        "SELECT SUM(k.tokens) AS tokens FROM known_entries k
         JOIN schemes s ON s.name = COALESCE(k.scheme, 'file')
         WHERE k.run_id = ? AND s.model_visible AND k.status <> 202",
    )
    .bind::<BigInt, _>(run_id)
    .get_result(conn)?;
    Ok(total.tokens.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{Category, EntryStatus, Fidelity};
    use crate::db::models::entry::Selector;
    use crate::db::queries::entries::{set_fidelity, upsert_entry};
    use crate::db::testing::{sample_run, write, TestDb};

    #[test]
    fn only_visible_rows_appear_and_index_shows_the_path_only() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn);
        for path in [
            "app.js",
            "notes.md",
            "known://k",
            "think://turn_1/",
            "system://1",
            "thought://x",
            "sh://turn_1/ls",
        ] {
            upsert_entry(conn, &write(run.id, path, "body", 1)).unwrap();
        }
        let mut proposal = write(run.id, "sh://turn_1/ls", "ls", 1);
        proposal.status = EntryStatus::Proposed;
        upsert_entry(conn, &proposal).unwrap();
        set_fidelity(
            conn,
            run.id,
            &Selector::Path("known://k".into()),
            Fidelity::Archive,
        )
        .unwrap();
        set_fidelity(
            conn,
            run.id,
            &Selector::Path("notes.md".into()),
            Fidelity::Index,
        )
        .unwrap();

        let rows = model_context(conn, run.id).unwrap();
        let visible: Vec<(&str, &str)> = rows
            .iter()
            .map(|row| (row.path.as_str(), row.body.as_str()))
            .collect();
        assert_eq!(visible, [("notes.md", ""), ("app.js", "body")]);
        let index_row = rows.first().unwrap();
        assert_eq!(
            (index_row.fidelity, index_row.category, index_row.tokens),
            (Fidelity::Index, Category::Data, 0)
        );
    }

    #[test]
    fn rows_are_ordered_by_section_skill_fidelity_turn_and_insertion() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn);
        let other = sample_run(conn);
        let writes = [
            ("prompt://1", 1),
            ("unknown://q", 1),
            ("get://turn_2/a", 2),
            ("get://turn_1/a", 1),
            ("known://late", 3),
            ("known://early", 1),
            ("b.js", 1),
            ("a.js", 1),
            ("known://summarised", 3),
            ("skill://style", 0),
        ];
        for (path, turn) in writes {
            upsert_entry(conn, &write(run.id, path, "text", turn)).unwrap();
        }
        upsert_entry(conn, &write(other.id, "known://other", "x", 1)).unwrap();
        set_fidelity(
            conn,
            run.id,
            &Selector::Path("known://summarised".into()),
            Fidelity::Summary,
        )
        .unwrap();

        let rows = model_context(conn, run.id).unwrap();
        let order: Vec<&str> = rows.iter().map(|row| row.path.as_str()).collect();
        assert_eq!(
            order,
            [
                "skill://style",
                "known://summarised",
                "known://early",
                "b.js",
                "a.js",
                "known://late",
                "get://turn_1/a",
                "get://turn_2/a",
                "unknown://q",
                "prompt://1",
            ]
        );
        let ordinals: Vec<i64> = rows.iter().map(|row| row.ordinal).collect();
        assert_eq!(ordinals, (1..=10).collect::<Vec<i64>>());
    }
}
