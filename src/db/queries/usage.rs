//! What a run's model calls cost, by purpose: its turns (`turns`, one row per turn, so the
//! count is the run's turns), the calls made for it beside them (`model_calls`: the session
//! notes' refresh, the recall's re-rank), and the calls of the runs it delegated sub-tasks
//! to, theirs included (`subagent`). `model_calls` also records each answered turn call (the
//! provider path's ledger, `llm::Ledger`); those rows are counted through `turns` instead,
//! never twice. `run/state` and `getRun` report it.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text};

use crate::db::ids::RunId;
use crate::db::models::run::{ModelCallForm, PurposeUsage};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// Records one answered model call made for a run.
pub(crate) fn record_call(conn: &mut Conn, form: &ModelCallForm) -> Result<(), DbError> {
    statement(
        "INSERT INTO model_calls (run_id, loop_id, turn, purpose, prompt_tokens, cached_tokens, \
                                  completion_tokens, reasoning_tokens, total_tokens, cost) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind::<BigInt, _>(form.run_id)
    .bind::<Nullable<BigInt>, _>(form.loop_id.map(|id| id.0))
    .bind::<Integer, _>(form.turn)
    .bind::<Text, _>(form.purpose.as_str())
    .bind::<BigInt, _>(form.prompt_tokens)
    .bind::<BigInt, _>(form.cached_tokens)
    .bind::<BigInt, _>(form.completion_tokens)
    .bind::<BigInt, _>(form.reasoning_tokens)
    .bind::<BigInt, _>(form.total_tokens)
    .bind::<Double, _>(form.cost)
    .execute(conn)?;
    Ok(())
}

/// The run's calls summed by purpose, `turn` first, then `session_notes`, `rerank` and
/// `subagent`; a purpose without calls is left out.
pub(crate) fn by_purpose(conn: &mut Conn, run: RunId) -> Result<Vec<PurposeUsage>, DbError> {
    Ok(statement(
        "WITH RECURSIVE delegated (id) AS ( \
             SELECT id FROM runs WHERE delegated_by = ? \
             UNION ALL SELECT r.id FROM runs AS r JOIN delegated AS d ON r.delegated_by = d.id), \
         calls (run_id, purpose, prompt_tokens, cached_tokens, completion_tokens, \
                reasoning_tokens, total_tokens, cost) AS ( \
             SELECT run_id, 'turn', prompt_tokens, cached_tokens, completion_tokens, \
                    reasoning_tokens, total_tokens, cost FROM turns \
             UNION ALL SELECT run_id, purpose, prompt_tokens, cached_tokens, completion_tokens, \
                    reasoning_tokens, total_tokens, cost FROM model_calls \
                    WHERE purpose <> 'turn'), \
         mine AS ( \
             SELECT CASE WHEN run_id = ? THEN purpose ELSE 'subagent' END AS purpose, \
                    prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, \
                    total_tokens, cost \
             FROM calls WHERE run_id = ? OR run_id IN (SELECT id FROM delegated)) \
         SELECT purpose, COUNT(*) AS calls, \
                CAST(SUM(prompt_tokens) AS BIGINT) AS prompt_tokens, \
                CAST(SUM(cached_tokens) AS BIGINT) AS cached_tokens, \
                CAST(SUM(completion_tokens) AS BIGINT) AS completion_tokens, \
                CAST(SUM(reasoning_tokens) AS BIGINT) AS reasoning_tokens, \
                CAST(SUM(total_tokens) AS BIGINT) AS total_tokens, \
                CAST(SUM(cost) AS DOUBLE PRECISION) AS cost \
         FROM mine GROUP BY purpose \
         ORDER BY CASE purpose WHEN 'turn' THEN 0 WHEN 'session_notes' THEN 1 \
                               WHEN 'rerank' THEN 2 ELSE 3 END",
    )
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(run)
    .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::CallPurpose;
    use crate::db::models::run::{TurnInsertForm, TurnUsageForm};
    use crate::db::queries::{runs, turns};
    use crate::db::testing::{sample_loop, sample_run, TestDb};

    fn call(run: RunId, purpose: CallPurpose, tokens: i64, cost: f64) -> ModelCallForm {
        ModelCallForm {
            run_id: run,
            loop_id: None,
            turn: 1,
            purpose,
            prompt_tokens: tokens,
            cached_tokens: 0,
            completion_tokens: 1,
            reasoning_tokens: 0,
            total_tokens: tokens + 1,
            cost,
        }
    }

    fn turn(conn: &mut Conn, run: RunId, tokens: i32) {
        let lp = sample_loop(conn, run, "p");
        let sequence = runs::take_turn_number(conn, run).unwrap();
        let row = turns::insert_turn(
            conn,
            &TurnInsertForm {
                run_id: run,
                loop_id: lp.id,
                sequence,
            },
        )
        .unwrap();
        let usage = TurnUsageForm {
            context_tokens: tokens,
            reasoning_content: None,
            prompt_tokens: tokens,
            cached_tokens: 0,
            completion_tokens: 1,
            reasoning_tokens: 0,
            total_tokens: tokens + 1,
            cost: 0.5,
        };
        turns::update_turn_usage(conn, row.id, &usage).unwrap();
    }

    fn delegate(conn: &mut Conn, child: RunId, parent: RunId) {
        statement("UPDATE runs SET delegated_by = ? WHERE id = ?")
            .bind::<BigInt, _>(parent)
            .bind::<BigInt, _>(child)
            .execute(conn)
            .unwrap();
    }

    /// The run's rows of `model_calls`: purpose, turn and prompt tokens each.
    fn ledger(conn: &mut Conn, run: RunId) -> Vec<(String, i32, i64)> {
        #[derive(QueryableByName)]
        struct Recorded {
            #[diesel(sql_type = Text)]
            purpose: String,
            #[diesel(sql_type = Integer)]
            turn: i32,
            #[diesel(sql_type = BigInt)]
            prompt_tokens: i64,
        }
        statement(
            "SELECT purpose, turn, CAST(prompt_tokens AS BIGINT) AS prompt_tokens \
             FROM model_calls WHERE run_id = ? ORDER BY id",
        )
        .bind::<BigInt, _>(run)
        .load::<Recorded>(conn)
        .unwrap()
        .into_iter()
        .map(|row| (row.purpose, row.turn, row.prompt_tokens))
        .collect()
    }

    /// Reverts the migrations down to the one that made `model_calls` the ledger of every
    /// call, that one included.
    fn before_the_ledger(conn: &mut Conn) {
        use crate::db::connection::{POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
        use diesel_migrations::MigrationHarness;
        const LEDGER: &str = "20261130000000";
        let applied = |conn: &mut Conn| -> Vec<String> {
            let versions = match conn {
                Conn::Sqlite(conn) => conn.applied_migrations(),
                Conn::Postgres(conn) => conn.applied_migrations(),
            };
            versions.unwrap().iter().map(ToString::to_string).collect()
        };
        while applied(conn)
            .iter()
            .any(|version| version.as_str() >= LEDGER)
        {
            match conn {
                Conn::Sqlite(conn) => conn.revert_last_migration(SQLITE_MIGRATIONS),
                Conn::Postgres(conn) => conn.revert_last_migration(POSTGRES_MIGRATIONS),
            }
            .unwrap();
        }
    }

    #[test]
    fn the_migration_records_the_turns_answered_before_it_and_reverts() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        record_call(conn, &call(run, CallPurpose::Turn, 100, 0.5)).unwrap();
        before_the_ledger(conn);
        assert_eq!(
            ledger(conn, run),
            [],
            "the turn's record went with the revert"
        );
        turn(conn, run, 100);
        let lp = sample_loop(conn, run, "unanswered");
        let sequence = runs::take_turn_number(conn, run).unwrap();
        let form = TurnInsertForm {
            run_id: run,
            loop_id: lp.id,
            sequence,
        };
        turns::insert_turn(conn, &form).unwrap();
        record_call(conn, &call(run, CallPurpose::Rerank, 7, 0.0)).unwrap();
        crate::db::connection::run_migrations(conn).unwrap();
        assert_eq!(
            ledger(conn, run),
            [("rerank".to_owned(), 1, 7), ("turn".to_owned(), 1, 100)]
        );
        assert_eq!(by_purpose(conn, run).unwrap()[0].calls, 2, "both turns");
    }

    #[test]
    fn a_turn_s_own_record_of_its_call_is_not_counted_twice() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        let child = sample_run(conn).id;
        delegate(conn, child, run);
        turn(conn, run, 100);
        record_call(conn, &call(run, CallPurpose::Turn, 100, 0.5)).unwrap();
        turn(conn, child, 20);
        record_call(conn, &call(child, CallPurpose::Turn, 20, 0.5)).unwrap();
        let seen: Vec<_> = by_purpose(conn, run)
            .unwrap()
            .into_iter()
            .map(|row| (row.purpose, row.calls, row.prompt_tokens, row.total_tokens))
            .collect();
        assert_eq!(
            seen,
            [
                (CallPurpose::Turn, 1, 100, 101),
                (CallPurpose::Subagent, 1, 20, 21)
            ]
        );
    }

    #[test]
    fn a_run_s_calls_are_summed_by_purpose_its_sub_agents_under_subagent() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn).id;
        let child = sample_run(conn).id;
        let grandchild = sample_run(conn).id;
        let stranger = sample_run(conn).id;
        delegate(conn, child, run);
        delegate(conn, grandchild, child);
        turn(conn, run, 100);
        turn(conn, run, 50);
        record_call(conn, &call(run, CallPurpose::Rerank, 7, 0.0)).unwrap();
        record_call(conn, &call(run, CallPurpose::SessionNotes, 30, 0.25)).unwrap();
        record_call(conn, &call(run, CallPurpose::SessionNotes, 10, 0.25)).unwrap();
        turn(conn, child, 20);
        record_call(conn, &call(child, CallPurpose::SessionNotes, 5, 0.0)).unwrap();
        turn(conn, grandchild, 3);
        turn(conn, stranger, 1000);
        let seen: Vec<_> = by_purpose(conn, run)
            .unwrap()
            .into_iter()
            .map(|row| (row.purpose, row.calls, row.prompt_tokens, row.total_tokens))
            .collect();
        assert_eq!(
            seen,
            [
                (CallPurpose::Turn, 2, 150, 152),
                (CallPurpose::SessionNotes, 2, 40, 42),
                (CallPurpose::Rerank, 1, 7, 8),
                (CallPurpose::Subagent, 3, 28, 31),
            ]
        );
        let notes = &by_purpose(conn, run).unwrap()[1];
        assert!((notes.cost - 0.5).abs() < 1e-9, "{notes:?}");
        let of_child: Vec<_> = by_purpose(conn, child)
            .unwrap()
            .into_iter()
            .map(|row| (row.purpose, row.calls))
            .collect();
        assert_eq!(
            of_child,
            [
                (CallPurpose::Turn, 1),
                (CallPurpose::SessionNotes, 1),
                (CallPurpose::Subagent, 1)
            ]
        );
    }
}
