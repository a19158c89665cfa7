//! The model's view of a run (`v_model_context`) and the per-turn snapshot of what it saw
//! (`turn_context`).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable};

use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::{ModelContextRow, TurnContextInsertForm, TurnContextRow};
use crate::db::schema::{turn_context, v_model_context};
use crate::db::DbError;

/// The rows the model can see, in context order.
pub fn model_context(
    conn: &mut SqliteConnection,
    run_id: RunId,
) -> Result<Vec<ModelContextRow>, DbError> {
    Ok(v_model_context::table
        .filter(v_model_context::run_id.eq(run_id))
        .order(v_model_context::ordinal)
        .select(ModelContextRow::as_select())
        .load(conn)?)
}

/// Replaces the snapshot of turn `turn` with `rows` (the projected context); returns the
/// number of rows stored.
pub fn replace_turn_context(
    conn: &mut SqliteConnection,
    run_id: RunId,
    turn: i32,
    rows: &[TurnContextInsertForm],
) -> Result<usize, DbError> {
    if rows
        .iter()
        .any(|row| row.run_id != run_id || row.turn != turn)
    {
        return Err(DbError::Invalid(
            "turn context rows must belong to the run and turn replaced".to_owned(),
        ));
    }
    conn.immediate_transaction(|conn| {
        delete_turn_context(conn, run_id, turn)?;
        Ok(diesel::insert_into(turn_context::table)
            .values(rows)
            .execute(conn)?)
    })
}

/// Replaces the snapshot of turn `turn` with the unprojected rows of `v_model_context`;
/// returns the number of rows stored.
pub fn materialize_turn_context(
    conn: &mut SqliteConnection,
    run_id: RunId,
    loop_id: Option<LoopId>,
    turn: i32,
) -> Result<usize, DbError> {
    conn.immediate_transaction(|conn| {
        delete_turn_context(conn, run_id, turn)?;
        Ok(diesel::sql_query(
            "INSERT INTO turn_context
                 (run_id, loop_id, turn, ordinal, path, status, fidelity, body, tokens, attributes,
                  category, source_turn)
             SELECT run_id, ?2, ?3, ordinal, path, status, fidelity, body, tokens, attributes,
                    category, turn
             FROM v_model_context WHERE run_id = ?1 ORDER BY ordinal",
        )
        .bind::<BigInt, _>(run_id)
        .bind::<Nullable<BigInt>, _>(loop_id)
        .bind::<Integer, _>(turn)
        .execute(conn)?)
    })
}

fn delete_turn_context(
    conn: &mut SqliteConnection,
    run_id: RunId,
    turn: i32,
) -> Result<usize, DbError> {
    Ok(diesel::delete(
        turn_context::table
            .filter(turn_context::run_id.eq(run_id))
            .filter(turn_context::turn.eq(turn)),
    )
    .execute(conn)?)
}

/// The snapshot of one turn, in context order.
pub fn turn_context(
    conn: &mut SqliteConnection,
    run_id: RunId,
    turn: i32,
) -> Result<Vec<TurnContextRow>, DbError> {
    Ok(turn_context::table
        .filter(turn_context::run_id.eq(run_id))
        .filter(turn_context::turn.eq(turn))
        .order(turn_context::ordinal)
        .select(TurnContextRow::as_select())
        .load(conn)?)
}
