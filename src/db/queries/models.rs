//! The model catalogue: aliases mapped to provider model ids.

use crate::db::backend::per_backend;
use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text};

use crate::usage::{Micros, Price};

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
    Ok(statement("SELECT * FROM models WHERE alias = ?")
        .bind::<Text, _>(alias)
        .get_result(conn)
        .optional()?)
}

/// Inserts the model or updates the one with the same alias; a `None` context length or
/// price keeps the stored one. A new price applies to the calls recorded after it: each
/// call's cost is fixed when it is recorded.
pub(crate) fn upsert_model(conn: &mut Conn, form: &ModelInsertForm) -> Result<ModelRow, DbError> {
    let price = |of: fn(&Price) -> Micros| form.price.as_ref().map(|price| of(price).0);
    Ok(statement(
        "INSERT INTO models (alias, actual, context_length, input_price, cached_price, output_price)
         VALUES (?, ?, ?, COALESCE(?, 0), COALESCE(?, 0), COALESCE(?, 0))
         ON CONFLICT (alias) DO UPDATE SET
             actual = excluded.actual,
             context_length = COALESCE(excluded.context_length, models.context_length),
             input_price = CASE WHEN ? THEN excluded.input_price ELSE models.input_price END,
             cached_price = CASE WHEN ? THEN excluded.cached_price ELSE models.cached_price END,
             output_price = CASE WHEN ? THEN excluded.output_price ELSE models.output_price END
         RETURNING *",
    )
    .bind::<Text, _>(&form.alias)
    .bind::<Text, _>(&form.actual)
    .bind::<Nullable<Integer>, _>(form.context_length)
    .bind::<Nullable<BigInt>, _>(price(|price| price.input))
    .bind::<Nullable<BigInt>, _>(price(|price| price.cached_input))
    .bind::<Nullable<BigInt>, _>(price(|price| price.output))
    .bind::<Bool, _>(form.price.is_some())
    .bind::<Bool, _>(form.price.is_some())
    .bind::<Bool, _>(form.price.is_some())
    .get_result(conn)?)
}

/// The catalogue's model with this provider model id (`actual`): the one added first when
/// several aliases share it.
pub(crate) fn by_actual(conn: &mut Conn, actual: &str) -> Result<Option<ModelRow>, DbError> {
    Ok(
        statement("SELECT * FROM models WHERE actual = ? ORDER BY id LIMIT 1")
            .bind::<Text, _>(actual)
            .get_result(conn)
            .optional()?,
    )
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
            price: None,
        }
    }

    #[test]
    fn a_price_is_kept_until_one_is_given_and_found_by_the_provider_model() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let priced = Price::from_dollars(3.0, Some(0.3), 15.0).unwrap();
        let with_price = ModelInsertForm {
            price: Some(priced),
            ..form("potato", "openai/p", None)
        };
        assert_eq!(upsert_model(conn, &with_price).unwrap().price(), priced);
        upsert_model(conn, &form("potato", "openai/p", Some(8192))).unwrap();
        let price_of =
            |conn: &mut Conn, actual: &str| by_actual(conn, actual).unwrap().map(|row| row.price());
        assert_eq!(price_of(conn, "openai/p"), Some(priced), "kept");
        upsert_model(conn, &form("second", "openai/p", None)).unwrap();
        assert_eq!(
            price_of(conn, "openai/p"),
            Some(priced),
            "the first alias's"
        );
        assert_eq!(price_of(conn, "openai/none"), None);
        let cheaper = Price::from_dollars(1.0, None, 2.0).unwrap();
        let changed = ModelInsertForm {
            price: Some(cheaper),
            ..form("potato", "openai/p", None)
        };
        upsert_model(conn, &changed).unwrap();
        assert_eq!(price_of(conn, "openai/p"), Some(cheaper));
        assert_eq!(
            find_model(conn, "second").unwrap().unwrap().price(),
            Price::default()
        );
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
