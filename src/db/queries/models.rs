//! The model catalogue: aliases mapped to provider model ids.

use crate::db::backend::per_backend;
use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{Integer, Nullable, Text};

use crate::db::models::{ModelInsertForm, ModelRow};
use crate::db::schema::models;
use crate::db::DbError;

/// Models ordered by alias (byte order), paged.
pub(crate) fn list_models(
    conn: &mut Conn,
    limit: Option<i64>,
    offset: Option<i64>,
) -> Result<Vec<ModelRow>, DbError> {
    Ok(models::table
        .order(models::alias)
        .limit(limit.unwrap_or(i64::MAX))
        .offset(offset.unwrap_or(0))
        .select(ModelRow::as_select())
        .load(conn)?)
}

/// The model with this alias.
pub(crate) fn find_model(conn: &mut Conn, alias: &str) -> Result<Option<ModelRow>, DbError> {
    Ok(models::table
        .filter(models::alias.eq(alias))
        .select(ModelRow::as_select())
        .first(conn)
        .optional()?)
}

/// Inserts the model or updates the one with the same alias; a `None` context length keeps
/// the stored one.
pub(crate) fn upsert_model(conn: &mut Conn, form: &ModelInsertForm) -> Result<ModelRow, DbError> {
    Ok(statement(
        "INSERT INTO models (alias, actual, context_length) VALUES (?, ?, ?)
         ON CONFLICT (alias) DO UPDATE SET
             actual = excluded.actual,
             context_length = COALESCE(excluded.context_length, models.context_length)
         RETURNING *",
    )
    .bind::<Text, _>(&form.alias)
    .bind::<Text, _>(&form.actual)
    .bind::<Nullable<Integer>, _>(form.context_length)
    .get_result(conn)?)
}

/// Removes the model; `false` when there was none.
pub(crate) fn remove_model(conn: &mut Conn, alias: &str) -> Result<bool, DbError> {
    let removed = diesel::delete(models::table.filter(models::alias.eq(alias))).execute(conn)?;
    Ok(removed > 0)
}

/// Records a context length discovered from the provider.
pub(crate) fn set_context_length(
    conn: &mut Conn,
    alias: &str,
    context_length: i32,
) -> Result<ModelRow, DbError> {
    per_backend!(conn, |conn| diesel::update(
        models::table.filter(models::alias.eq(alias))
    )
    .set(models::context_length.eq(context_length))
    .returning(ModelRow::as_returning())
    .get_result(conn))
    .optional()?
    .ok_or_else(|| DbError::NotFound(format!("model {alias}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    fn form(alias: &str, actual: &str, context_length: Option<i32>) -> ModelInsertForm {
        ModelInsertForm {
            alias: alias.into(),
            actual: actual.into(),
            context_length,
        }
    }

    #[test]
    fn catalogue_round_trip() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let potato = upsert_model(conn, &form("potato", "openai/p", Some(16_000))).unwrap();
        upsert_model(conn, &form("apple", "ollama/a", None)).unwrap();
        let updated = upsert_model(conn, &form("potato", "openai/q", None)).unwrap();
        assert_eq!(updated.id, potato.id);
        assert_eq!(updated.actual, "openai/q");
        assert_eq!(updated.context_length, Some(16_000));
        let aliases: Vec<String> = list_models(conn, None, None)
            .unwrap()
            .into_iter()
            .map(|m| m.alias)
            .collect();
        assert_eq!(aliases, ["apple", "potato"]);
        assert_eq!(list_models(conn, Some(1), Some(1)).unwrap().len(), 1);
        assert_eq!(
            set_context_length(conn, "apple", 40_960)
                .unwrap()
                .context_length,
            Some(40_960)
        );
        assert!(matches!(
            set_context_length(conn, "nope", 1),
            Err(DbError::NotFound(_))
        ));
        assert!(remove_model(conn, "apple").unwrap());
        assert!(!remove_model(conn, "apple").unwrap());
        assert_eq!(find_model(conn, "apple").unwrap(), None);
        assert!(matches!(
            upsert_model(conn, &form("x", "", None)),
            Err(DbError::Invalid(_))
        ));
    }
}
