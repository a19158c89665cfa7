//! Turns: one row per LLM call, with usage written back after the call.

use crate::db::backend::per_backend;
use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Integer, Nullable, Text};

use crate::db::ids::{RunId, TurnId};
use crate::db::models::run::{TurnInsertForm, TurnRow, TurnUsageForm};
use crate::db::schema::turns;
use crate::db::DbError;

/// Records the start of a turn.
pub(crate) fn insert_turn(conn: &mut Conn, form: &TurnInsertForm) -> Result<TurnRow, DbError> {
    Ok(per_backend!(conn, |conn| diesel::insert_into(
        turns::table
    )
    .values(form)
    .returning(TurnRow::as_returning())
    .get_result(conn))?)
}

/// Writes a turn's usage after the LLM call.
pub(crate) fn update_turn_usage(
    conn: &mut Conn,
    id: TurnId,
    usage: &TurnUsageForm,
) -> Result<(), DbError> {
    let updated = statement(
        "UPDATE turns SET context_tokens = ?, reasoning_content = COALESCE(?, reasoning_content),
             prompt_tokens = ?, cached_tokens = ?, completion_tokens = ?, reasoning_tokens = ?,
             total_tokens = ?, cost = ?
         WHERE id = ?",
    )
    .bind::<Integer, _>(usage.context_tokens)
    .bind::<Nullable<Text>, _>(&usage.reasoning_content)
    .bind::<Integer, _>(usage.prompt_tokens)
    .bind::<Integer, _>(usage.cached_tokens)
    .bind::<Integer, _>(usage.completion_tokens)
    .bind::<Integer, _>(usage.reasoning_tokens)
    .bind::<Integer, _>(usage.total_tokens)
    .bind::<Double, _>(usage.cost)
    .bind::<BigInt, _>(id)
    .execute(conn)?;
    match updated {
        0 => Err(DbError::NotFound(format!("turn {id}"))),
        _ => Ok(()),
    }
}

/// The run's newest turn (the calibration for the next budget check).
pub(crate) fn latest_turn(conn: &mut Conn, run_id: RunId) -> Result<Option<TurnRow>, DbError> {
    Ok(
        statement("SELECT * FROM turns WHERE run_id = ? ORDER BY sequence DESC LIMIT 1")
            .bind::<BigInt, _>(run_id)
            .get_result(conn)
            .optional()?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::db::queries::runs;
    use crate::db::testing::{sample_loop, sample_run, TestDb};

    #[test]
    fn usage_is_written_back_to_the_turn() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn);
        let loop_row = sample_loop(conn, run.id, "p");
        for cost in [0.5, 0.25] {
            let sequence = runs::take_turn_number(conn, run.id).unwrap();
            let turn = insert_turn(
                conn,
                &TurnInsertForm {
                    run_id: run.id,
                    loop_id: loop_row.id,
                    sequence,
                },
            )
            .unwrap();
            let usage = TurnUsageForm {
                context_tokens: 100,
                reasoning_content: Some("why".into()),
                prompt_tokens: 100,
                cached_tokens: 10,
                completion_tokens: 20,
                reasoning_tokens: 5,
                total_tokens: 120,
                cost,
            };
            update_turn_usage(conn, turn.id, &usage).unwrap();
            let updated = latest_turn(conn, run.id).unwrap().unwrap();
            assert_eq!(updated.sequence, sequence);
            assert_eq!(updated.reasoning_content.as_deref(), Some("why"));
            assert_eq!(updated.prompt_tokens, 100);
        }
        assert_eq!(
            latest_turn(conn, run.id).unwrap().map(|t| t.sequence),
            Some(2)
        );
        let duplicate = insert_turn(
            conn,
            &TurnInsertForm {
                run_id: run.id,
                loop_id: loop_row.id,
                sequence: 2,
            },
        );
        assert!(matches!(duplicate, Err(DbError::Conflict(_))));
    }
}
